/** Builds .tar.gz archives for the zoo tests (ustar headers, GNU long names), like `tar czf`. */
import { gzipSync } from 'node:zlib';

/** One 512-byte ustar header; `linkName` for link entries (types '1' and '2'). */
export function header(name: string, size: number, type: string, linkName = ''): Buffer {
  const h = Buffer.alloc(512);
  const put = (text: string, at: number, length: number): void => void h.write(text, at, length, 'utf8');
  put(name, 0, 100);
  put('0000644\0', 100, 8);
  put('0000000\0', 108, 8);
  put('0000000\0', 116, 8);
  put(`${size.toString(8).padStart(11, '0')}\0`, 124, 12);
  put('00000000000\0', 136, 12);
  put('        ', 148, 8);
  put(type, 156, 1);
  put(linkName, 157, 100);
  put('ustar\0', 257, 6);
  put('00', 263, 2);
  let sum = 0;
  for (const b of h) sum += b;
  put(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8);
  return h;
}

export const pad = (data: Buffer): Buffer => Buffer.concat([data, Buffer.alloc((512 - (data.length % 512)) % 512)]);

/** Entries in order; a name over 100 bytes gets a GNU ././@LongLink entry; '/'-ended names are folders. */
export function tarGz(entries: [string, Buffer | string][]): Buffer {
  const blocks: Buffer[] = [];
  for (const [name, content] of entries) {
    const data = Buffer.from(content);
    if (Buffer.byteLength(name) > 100) {
      const long = Buffer.from(`${name}\0`);
      blocks.push(header('././@LongLink', long.length, 'L'), pad(long));
    }
    const folder = name.endsWith('/');
    blocks.push(header(name.slice(0, 100), folder ? 0 : data.length, folder ? '5' : '0'));
    if (!folder) blocks.push(pad(data));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}
