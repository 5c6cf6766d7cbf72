// The floor for issue 12's first-check target: the least any static check of these objects must
// do in a fresh Node.js process, and nothing more. For each file it reads the ELF header, the
// section headers, `.dynamic`, `.dynsym` and `.dynstr`, and makes a string of every DT_NEEDED
// name and of every undefined symbol's name (what must then be searched for and looked up).
// No search, no lookup, no version check, no validation: a loader model that does those too
// cannot be faster than this. Section headers stand in for the dynamic tags here only because
// they give each table's size directly (the cheapest way to read the tables).
// Usage: node bench/lib/check-floor.mjs FILE... (prints the counts, so the work is not dead code)
import {closeSync, fstatSync, openSync, readSync} from 'node:fs';

let needed = 0;
let undefinedSymbols = 0;
let objects = 0;

function read(fd, offset, length) {
  const b = Buffer.allocUnsafe(length);
  readSync(fd, b, 0, length, offset);
  return b;
}

for (const path of process.argv.slice(2)) {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const eh = read(fd, 0, 64);
    if (eh.readUInt32BE(0) !== 0x7f454c46 || eh[4] !== 2) continue; // ELF64 only (the benchmark's objects)
    const shoff = Number(eh.readBigUInt64LE(0x28));
    const shentsize = eh.readUInt16LE(0x3a);
    const shnum = eh.readUInt16LE(0x3c);
    if (shoff === 0 || shoff + shnum * shentsize > size) continue;
    const sh = read(fd, shoff, shnum * shentsize);
    const section = (i) => ({type: sh.readUInt32LE(i * shentsize + 4), offset: Number(sh.readBigUInt64LE(i * shentsize + 0x18)), size: Number(sh.readBigUInt64LE(i * shentsize + 0x20)), link: sh.readUInt32LE(i * shentsize + 0x28)});
    objects++;
    for (let i = 0; i < shnum; i++) {
      const s = section(i);
      if (s.type !== 11 && s.type !== 6) continue; // SHT_DYNSYM, SHT_DYNAMIC
      const strs = section(s.link);
      const names = read(fd, strs.offset, strs.size);
      const table = read(fd, s.offset, s.size);
      const name = (off) => names.toString('latin1', off, names.indexOf(0, off));
      if (s.type === 6) {
        for (let o = 0; o + 16 <= table.length; o += 16) {
          const tag = table.readUInt32LE(o);
          if (tag === 0) break;
          if (tag === 1 && name(table.readUInt32LE(o + 8)).length > 0) needed++;
        }
      } else {
        for (let o = 24; o + 24 <= table.length; o += 24) {
          if (table.readUInt16LE(o + 6) === 0 && table.readUInt32LE(o) !== 0 && name(table.readUInt32LE(o)).length > 0) undefinedSymbols++;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}
console.log(`${objects} objects, ${needed} DT_NEEDED names, ${undefinedSymbols} undefined symbols`);
