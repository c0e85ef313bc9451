// The words of a text: what text-ts's tools share (esbuild bundles it in).

export function words(text: string): string[] {
  return text.split(/\s+/).filter((word) => word.length > 0);
}
