import { splitForCounting } from "./src/context/tokens.ts";
import { buildCorpus } from "./bench/tokens.ts";
import { countTokens, encode, decode } from "gpt-tokenizer/encoding/o200k_base";
const o={disallowedSpecial:new Set<string>()} as any;
const corpus = buildCorpus().text; let shown=0;
for (let i=0;i+3000<corpus.length && shown<8;i+=3000){ const s=corpus.slice(i,i+3000); const ps=splitForCounting(s); const sum=ps.reduce((a,p)=>a+countTokens(p,o),0); const pl=countTokens(s,o);
 if (sum!==pl){ for (let k=1;k<ps.length;k++){ const a=ps.slice(0,k).join(""); const two=countTokens(ps[k-1]+ps[k],o); if (!/\S{129}/.test(s.slice(Math.max(0,a.length-400), a.length+400)) && two!==countTokens(ps[k-1],o)+countTokens(ps[k],o)) { console.log(JSON.stringify(ps[k-1].slice(-30)), "|", JSON.stringify(ps[k].slice(0,30)), ps[k].length); shown++; break; } } } }
