/** Shared by the streaming tests and the streaming benchmark. */

/** A long plain answer: words, emoji, odd Unicode and a long run without spaces. */
export function longAnswer(chars: number): string {
  const words = ["stream", "préview", "final", "🙂", "edit", "naïve", "テスト", "once", "Z͑ͫ", "part"];
  const out: string[] = [];
  let length = 0;
  for (let index = 0; length < chars; index++) {
    const word = index === 40 ? "x".repeat(700) : words[index % words.length]!;
    out.push(word);
    length += word.length + 1;
  }
  return out.join(" ");
}
