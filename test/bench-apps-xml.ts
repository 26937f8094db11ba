/**
 * A strict little XML well-formedness check for the benchmark SVGs (no parser package in
 * the project): one root element, every tag closed in order, attributes quoted and not
 * repeated, only the five predefined entities and numeric references, no stray '<' or
 * '&' in text. Returns the elements, in document order, with their attributes.
 */
export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  depth: number;
}

const NAME = /^[A-Za-z_][\w.:-]*$/;
const ENTITY = /&(?!(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);)/;

export function parseXml(text: string): XmlElement[] {
  const out: XmlElement[] = [];
  const stack: string[] = [];
  let i = 0;
  let rootsSeen = 0;
  const body = text.replace(/^<\?xml[^>]*\?>\s*/, '');
  while (i < body.length) {
    const lt = body.indexOf('<', i);
    const chunk = lt < 0 ? body.slice(i) : body.slice(i, lt);
    if (ENTITY.test(chunk)) throw new Error(`bad entity in text near '${chunk.slice(0, 40)}'`);
    if (chunk.includes('>')) throw new Error(`stray '>' in text near '${chunk.slice(0, 40)}'`);
    if (stack.length === 0 && chunk.trim() !== '') throw new Error(`text outside the root element: '${chunk.trim().slice(0, 40)}'`);
    if (lt < 0) break;
    const gt = body.indexOf('>', lt);
    if (gt < 0) throw new Error(`unterminated tag at ${lt}`);
    const tag = body.slice(lt + 1, gt);
    i = gt + 1;
    if (tag.startsWith('!--')) {
      if (!tag.endsWith('--')) throw new Error('unterminated comment');
      continue;
    }
    if (tag.startsWith('/')) {
      const name = tag.slice(1).trim();
      const open = stack.pop();
      if (open !== name) throw new Error(`</${name}> closes <${open ?? 'nothing'}>`);
      continue;
    }
    const selfClosing = tag.endsWith('/');
    const inner = selfClosing ? tag.slice(0, -1) : tag;
    const m = /^([^\s]+)([\s\S]*)$/.exec(inner);
    if (!m || !NAME.test(m[1]!)) throw new Error(`bad tag <${tag.slice(0, 40)}>`);
    const attrs: Record<string, string> = {};
    let rest = m[2]!.trim();
    while (rest !== '') {
      const a = /^([A-Za-z_][\w.:-]*)="([^"<]*)"\s*/.exec(rest);
      if (!a) throw new Error(`bad attribute syntax in <${m[1]}>: '${rest.slice(0, 40)}'`);
      if (a[1]! in attrs) throw new Error(`attribute ${a[1]} repeated in <${m[1]}>`);
      if (ENTITY.test(a[2]!)) throw new Error(`bad entity in attribute ${a[1]} of <${m[1]}>`);
      attrs[a[1]!] = a[2]!
        .replace(/&quot;/g, '"')
        .replace(/&apos;/g, "'")
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>')
        .replace(/&amp;/g, '&');
      rest = rest.slice(a[0].length);
    }
    if (stack.length === 0 && ++rootsSeen > 1) throw new Error('more than one root element');
    out.push({ name: m[1]!, attrs, depth: stack.length });
    if (!selfClosing) stack.push(m[1]!);
  }
  if (stack.length > 0) throw new Error(`unclosed <${stack.join('> <')}>`);
  if (out.length === 0) throw new Error('no element');
  return out;
}
