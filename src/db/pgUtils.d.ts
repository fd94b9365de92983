// The value conversion node-postgres applies to every query parameter (it ships no types for this module).
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): string | Buffer | null };
  export default utils;
}
