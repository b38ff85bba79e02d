import { buildTokenCounter } from "./src/context/tokens.ts";
import { buildCorpus } from "./bench/tokens.ts";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
const o={disallowedSpecial:new Set<string>()} as any;
const c = buildTokenCounter("o200k_base", undefined, { budgetMs: Infinity });
const corpus = buildCorpus().text;
for (const size of [200, 3000, 16000, 50000]) { let a=0,b=0,worst=0,ex=0,n=0; for (let i=0;i+size<=corpus.length;i+=size){ const s=corpus.slice(i,i+size); const x=c.countText(s), y=countTokens(s,o); a+=x;b+=y;n++; if(x===y)ex++; worst=Math.max(worst,Math.abs(x-y)/y);} console.log(size, "agg", ((a-b)/b*100).toFixed(3)+"%", "worst", (worst*100).toFixed(2)+"%", "exact", ex+"/"+n); }
