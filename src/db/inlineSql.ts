/**
 * A parameterised statement as one without parameters: each `$n` replaced by the literal of the value node-postgres
 * would have sent for it, so that several statements can go to Postgres in one simple query (one round trip).
 *
 * The literal is untyped ('…'), as a parameter sent in text form is: Postgres infers its type from where it stands,
 * as it would the parameter's. Values are converted by node-postgres's own `prepareValue` (dates, arrays, JSON),
 * then quoted as its `escapeLiteral` quotes (`quoteLiteral`); a Buffer, sent in binary as a parameter, becomes a bytea
 * literal in hex.
 * `$n` is replaced only outside quoted strings (escape strings too), quoted identifiers, dollar-quoted strings and
 * comments.
 */
import utils from 'pg/lib/utils.js';

/**
 * `text` as an SQL string literal, exactly as node-postgres's `escapeLiteral` writes it: quotes doubled, and with a
 * backslash in it, backslashes doubled in an escape string (` E'…'`), so that it reads the same whatever
 * standard_conforming_strings says. Written with two replaces, not a character at a time: `escapeLiteral` builds
 * its answer by appending each character, a string piece per character, and a projector's batch of rows (a JSON
 * array of some kilobytes, written into the COMMIT's query) made about a quarter of what a payment allocated.
 */
export function quoteLiteral(text: string): string {
  const quoted = text.includes("'") ? text.replace(/'/g, "''") : text;
  return text.includes('\\') ? ` E'${quoted.replace(/\\/g, '\\\\')}'` : `'${quoted}'`;
}

/**
 * The literal standing for `value` where a parameter stood. A NUL character is refused: the query text is sent as a
 * C string, which would end there (Postgres refuses it in a parameter too).
 */
export function literalOf(value: unknown): string {
  const prepared = utils.prepareValue(value);
  if (prepared === null) return 'NULL';
  // An escape string, so that it reads the same whatever standard_conforming_strings says.
  if (Buffer.isBuffer(prepared)) return `E'\\\\x${prepared.toString('hex')}'`;
  if (prepared.includes('\u0000')) throw new Error('inlineParameters: a value holds a NUL character');
  return quoteLiteral(prepared);
}

/** A dollar quote's opening tag, where it stands: `$$` or `$name$` (a name's letters may be any beyond ASCII too). */
const DOLLAR_TAG = /\$(?:[A-Za-z_\u0080-\uffff][A-Za-z0-9_\u0080-\uffff]*)?\$/y;

export function inlineParameters(text: string, parameters: readonly unknown[]): string {
  if (parameters.length === 0) return text;
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === "'" || c === '"') {
      // A quoted string or identifier; a doubled quote inside it is an escaped one, and so is a backslashed one in
      // an escape string (E'…').
      const backslashes = c === "'" && /[Ee]/.test(text[i - 1] ?? '') && !/[A-Za-z0-9_$]/.test(text[i - 2] ?? '');
      let j = i + 1;
      for (;;) {
        const close = text.indexOf(c, j);
        if (close === -1) throw new Error('inlineParameters: an unterminated quote');
        let escaped = 0;
        while (backslashes && text[close - 1 - escaped] === '\\') escaped++;
        if (escaped % 2 === 1 || text[close + 1] === c) { j = close + (escaped % 2 === 1 ? 1 : 2); continue; }
        j = close + 1;
        break;
      }
      out += text.slice(i, j);
      i = j;
    } else if (c === '-' && text[i + 1] === '-') {
      // To the end of the line (a newline or a carriage return).
      let j = i + 2;
      while (j < text.length && text[j] !== '\n' && text[j] !== '\r') j++;
      out += text.slice(i, j);
      i = j;
    } else if (c === '/' && text[i + 1] === '*') {
      // Block comments nest in Postgres.
      let depth = 1;
      let j = i + 2;
      while (depth > 0) {
        if (j >= text.length) throw new Error('inlineParameters: an unterminated comment');
        if (text[j] === '/' && text[j + 1] === '*') { depth++; j += 2; } else if (text[j] === '*' && text[j + 1] === '/') { depth--; j += 2; } else j++;
      }
      out += text.slice(i, j);
      i = j;
    } else if (c === '$' && /[A-Za-z0-9_$\u0080-\uffff]/.test(text[i - 1] ?? '')) {
      // Part of a name (Postgres allows $ after a name's first character).
      out += c;
      i++;
    } else if (c === '$') {
      const number = /^\$(\d+)/.exec(text.slice(i, i + 12));
      if (number) {
        const n = Number(number[1]);
        if (n < 1 || n > parameters.length) throw new Error(`inlineParameters: no value for $${n}`);
        out += literalOf(parameters[n - 1]);
        i += number[0].length;
        continue;
      }
      DOLLAR_TAG.lastIndex = i;
      const tag = DOLLAR_TAG.exec(text);
      if (tag) {
        const end = text.indexOf(tag[0], i + tag[0].length);
        if (end === -1) throw new Error('inlineParameters: an unterminated dollar quote');
        out += text.slice(i, end + tag[0].length);
        i = end + tag[0].length;
        continue;
      }
      out += c;
      i++;
    } else {
      // Copy up to the next character that may start one of the above.
      let j = i + 1;
      while (j < text.length && !"'\"-/$".includes(text[j]!)) j++;
      out += text.slice(i, j);
      i = j;
    }
  }
  return out;
}
