// The lookup floor for issue 12's first-check target: the least a static check of these objects
// must do beyond reading their tables (bench/lib/check-floor.mjs), in a fresh Node.js process.
// Each file is modelled as its own process the way `ldd -r` loads it: its DT_NEEDED closure found
// (DT_RUNPATH/DT_RPATH with $ORIGIN, then the default directories, through cached directory
// listings), and every undefined reference of every object of the process looked up in the scope
// through the providers' GNU hash tables (bloom filter, bucket, chain, name, version name), as
// do_lookup_x does. What a check must do on top and this does not: validation of the tables (a
// corrupt file must be an error, not a wrong verdict), LD_LIBRARY_PATH, ld.so.cache, glibc-hwcaps
// and legacy hwcaps directories, DT_HASH objects, ELF class/machine and ISA checks, version
// needs (vernaux against verdef), weak and hidden symbols, protected and copy relocations,
// relocation-driven lookups, inode-identity of loaded sonames, explanations and the report. No
// check that does all of that can be faster than this.
// Usage: node bench/lib/check-lookup-floor.mjs [--threads N] FILE...   (N worker threads share
// the files; each parses the dependencies its files need, as separate processes of ldd would)
import {closeSync, fstatSync, openSync, readdirSync, readSync} from 'node:fs';
import {dirname} from 'node:path';
import {isMainThread, parentPort, Worker, workerData} from 'node:worker_threads';

const DEFAULT_DIRS = ['/lib/x86_64-linux-gnu', '/usr/lib/x86_64-linux-gnu', '/lib', '/usr/lib'];
const parsed = new Map(); // path or dev:ino -> object | null
const listings = new Map(); // directory -> Set of names

function read(fd, offset, length) {
  const b = Buffer.allocUnsafeSlow(length);
  readSync(fd, b, 0, length, offset);
  return b;
}

function cstr(names, off) {
  return names.latin1Slice(off, names.indexOf(0, off));
}

/** The tables of one ELF64 little-endian object, or null (not ELF, no dynamic section). */
function parse(path) {
  const known = parsed.get(path);
  if (known !== undefined) return known;
  let fd;
  try {
    fd = openSync(path, 'r');
  } catch {
    parsed.set(path, null);
    return null;
  }
  try {
    const st = fstatSync(fd);
    const inode = `${st.dev}:${st.ino}`;
    const same = parsed.get(inode);
    if (same !== undefined) {
      parsed.set(path, same);
      return same;
    }
    const object = st.size < 64 ? null : parseOpen(fd, path);
    parsed.set(path, object);
    parsed.set(inode, object);
    return object;
  } finally {
    closeSync(fd);
  }
}

function parseOpen(fd, path) {
  const eh = read(fd, 0, 64);
  if (eh.readUInt32BE(0) !== 0x7f454c46 || eh[4] !== 2 || eh[5] !== 1) return null;
  const phoff = Number(eh.readBigUInt64LE(0x20));
  const phnum = eh.readUInt16LE(0x38);
  const ph = read(fd, phoff, phnum * 56);
  const loads = [];
  let dynOff = -1;
  let dynSize = 0;
  for (let i = 0; i < phnum; i++) {
    const b = i * 56;
    const type = ph.readUInt32LE(b);
    if (type === 1) loads.push({offset: Number(ph.readBigUInt64LE(b + 8)), vaddr: Number(ph.readBigUInt64LE(b + 16)), filesz: Number(ph.readBigUInt64LE(b + 32))});
    else if (type === 2) {
      dynOff = Number(ph.readBigUInt64LE(b + 8));
      dynSize = Number(ph.readBigUInt64LE(b + 32));
    }
  }
  if (dynOff < 0 || dynSize === 0) return null;
  const toOffset = (addr) => {
    for (const l of loads) if (addr >= l.vaddr && addr < l.vaddr + l.filesz) return addr - l.vaddr + l.offset;
    return -1;
  };
  const dyn = read(fd, dynOff, dynSize);
  const needed = [];
  let strtab = 0, strsz = 0, symtab = 0, gnuHash = 0, versym = 0, verneed = 0, verneednum = 0, verdef = 0, verdefnum = 0, rpath = -1, runpath = -1;
  for (let o = 0; o + 16 <= dyn.length; o += 16) {
    const tag = dyn.readUInt32LE(o);
    if (tag === 0 && dyn.readUInt32LE(o + 4) === 0) break;
    const v = Number(dyn.readBigUInt64LE(o + 8));
    switch (tag) {
      case 1: needed.push(v); break;
      case 5: strtab = v; break;
      case 10: strsz = v; break;
      case 6: symtab = v; break;
      case 15: rpath = v; break;
      case 29: runpath = v; break;
      case 0x6ffffef5: gnuHash = v; break;
      case 0x6ffffff0: versym = v; break;
      case 0x6ffffffe: verneed = v; break;
      case 0x6fffffff: verneednum = v; break;
      case 0x6ffffffc: verdef = v; break;
      case 0x6ffffffd: verdefnum = v; break;
    }
  }
  if (strtab === 0 || symtab === 0 || gnuHash === 0) return null; // DT_HASH-only objects: rare, left out
  const names = read(fd, toOffset(strtab), strsz);
  const hashAt = toOffset(gnuHash);
  const hh = read(fd, hashAt, 16);
  const nbuckets = hh.readUInt32LE(0);
  const symoffset = hh.readUInt32LE(4);
  const bloomWords = hh.readUInt32LE(8);
  const shift = hh.readUInt32LE(12);
  const bloomBuf = read(fd, hashAt + 16, bloomWords * 8);
  const bloom = new Uint32Array(bloomBuf.buffer, bloomBuf.byteOffset, bloomWords * 2); // 64-bit words as (low, high)
  const bucketBuf = read(fd, hashAt + 16 + bloomWords * 8, nbuckets * 4);
  const buckets = new Uint32Array(bucketBuf.buffer, bucketBuf.byteOffset, nbuckets);
  let last = 0;
  for (let i = 0; i < nbuckets; i++) if (buckets[i] > last) last = buckets[i];
  const chainAt = hashAt + 16 + bloomWords * 8 + nbuckets * 4;
  let count = symoffset;
  let chain = new Uint32Array(0);
  if (last >= symoffset) {
    // Read the chain in one go up to the last bucket's start, then walk on to its end marker.
    let words = last - symoffset + 1;
    let buf = read(fd, chainAt, words * 4);
    while (!(buf.readUInt32LE((words - 1) * 4) & 1)) {
      words += 64;
      buf = read(fd, chainAt, words * 4);
      let k = words - 64;
      while (k < words && !(buf.readUInt32LE(k * 4) & 1)) k++;
      if (k < words) words = k + 1;
    }
    chain = new Uint32Array(buf.buffer, buf.byteOffset, words);
    count = symoffset + words;
  }
  const syms = read(fd, toOffset(symtab), count * 24);
  const versions = versym ? read(fd, toOffset(versym), count * 2) : null;
  const versionName = new Map(); // version index -> name
  const versionFile = new Map(); // version index -> the library (vn_file) a needed version is asked of
  if (verdef) {
    let o = toOffset(verdef);
    for (let k = 0; k < verdefnum; k++) {
      const b = read(fd, o, 20);
      const aux = read(fd, o + b.readUInt32LE(12), 8);
      versionName.set(b.readUInt16LE(4), cstr(names, aux.readUInt32LE(0)));
      const next = b.readUInt32LE(16);
      if (next === 0) break;
      o += next;
    }
  }
  if (verneed) {
    let o = toOffset(verneed);
    for (let k = 0; k < verneednum; k++) {
      const b = read(fd, o, 16);
      let a = o + b.readUInt32LE(8);
      for (let j = 0; j < b.readUInt16LE(2); j++) {
        const x = read(fd, a, 16);
        versionName.set(x.readUInt16LE(6) & 0x7fff, cstr(names, x.readUInt32LE(8)));
        versionFile.set(x.readUInt16LE(6) & 0x7fff, cstr(names, b.readUInt32LE(4)));
        const next = x.readUInt32LE(12);
        if (next === 0) break;
        a += next;
      }
      const next = b.readUInt32LE(12);
      if (next === 0) break;
      o += next;
    }
  }
  // The references: every undefined symbol, its name, GNU hash and version name.
  const references = [];
  for (let i = 1; i < count; i++) {
    if (syms.readUInt16LE(i * 24 + 6) !== 0) continue;
    const off = syms.readUInt32LE(i * 24);
    let h = 5381;
    let end = off;
    for (; names[end] !== 0; end++) h = (Math.imul(h, 33) + names[end]) >>> 0;
    if (end === off) continue;
    const index = versions ? versions.readUInt16LE(i * 2) & 0x7fff : 0;
    references.push({name: names.latin1Slice(off, end), hash: h, version: index >= 2 ? versionName.get(index) ?? null : null, file: index >= 2 ? versionFile.get(index) ?? null : null});
  }
  return {
    path, origin: dirname(path), needed: needed.map((n) => cstr(names, n)),
    searchPath: (runpath >= 0 ? cstr(names, runpath) : rpath >= 0 ? cstr(names, rpath) : ''),
    names, syms, versions, versionName, nbuckets, symoffset, buckets, chain, bloom, bloomWords, shift, references,
  };
}

/** Does `o` define `ref` (do_lookup_x: bloom filter, bucket, chain, name, version name)? */
function defines(o, ref) {
  const h = ref.hash;
  if (o.nbuckets === 0) return false;
  const at = (Math.floor(h / 64) % o.bloomWords) * 2;
  if (!bit(o.bloom, at, h % 64) || !bit(o.bloom, at, (h >>> o.shift) % 64)) return false;
  let i = o.buckets[h % o.nbuckets];
  if (i < o.symoffset) return false;
  const name = ref.name;
  const n = name.length;
  const names = o.names;
  for (;; i++) {
    const w = o.chain[i - o.symoffset];
    if (((w ^ h) >>> 1) === 0) {
      const off = o.syms.readUInt32LE(i * 24);
      let same = names[off + n] === 0;
      for (let k = 0; same && k < n; k++) same = names[off + k] === name.charCodeAt(k);
      if (same && o.syms.readUInt16LE(i * 24 + 6) !== 0) {
        if (ref.version === null || o.versions === null) return true;
        if (o.versionName.get(o.versions.readUInt16LE(i * 2) & 0x7fff) === ref.version) return true;
      }
    }
    if (w & 1) return false;
  }
}

function bit(bloom, at, n) {
  return n < 32 ? (bloom[at] >>> n) & 1 : (bloom[at + 1] >>> (n - 32)) & 1;
}

function listing(dir) {
  let names = listings.get(dir);
  if (!names) {
    try {
      names = new Set(readdirSync(dir));
    } catch {
      names = new Set();
    }
    listings.set(dir, names);
  }
  return names;
}

function search(name, from) {
  if (name.includes('/')) return parse(name);
  const dirs = from.searchPath === '' ? DEFAULT_DIRS : [...from.searchPath.split(':').map((d) => d.replaceAll('$ORIGIN', from.origin)), ...DEFAULT_DIRS];
  for (const dir of dirs) {
    if (!listing(dir).has(name)) continue;
    const o = parse(`${dir}/${name}`);
    if (o) return o;
  }
  return null;
}

/** Each file as its own process: returns the counts, so the work is not dead code. */
function checkAll(files) {
  const counts = {objects: 0, references: 0, unbound: 0, notFound: 0};
  const done = new Set(); // objects whose references were looked up in a process already (as the model memoises)
  for (const path of files) {
    const target = parse(path);
    if (!target) continue;
    counts.objects++;
    const scope = [target];
    const inScope = new Set(scope);
    const named = new Map(); // DT_NEEDED name -> the object it loaded
    for (let k = 0; k < scope.length; k++) {
      for (const name of scope[k].needed) {
        const dep = search(name, scope[k]);
        if (!dep) counts.notFound++;
        else {
          if (!named.has(name)) named.set(name, dep);
          if (!inScope.has(dep)) {
            inScope.add(dep);
            scope.push(dep);
          }
        }
      }
    }
    for (const o of scope) {
      if (o !== target && done.has(o)) continue;
      done.add(o);
      for (const ref of o.references) {
        counts.references++;
        // The library the version is asked of nearly always defines it: asked first (whether
        // something in the scope binds the reference does not depend on the order).
        const likely = ref.file === null ? undefined : named.get(ref.file);
        if (likely !== undefined && likely !== o && defines(likely, ref)) continue;
        let bound = false;
        for (const s of scope) {
          if (s !== o && defines(s, ref)) {
            bound = true;
            break;
          }
        }
        if (!bound) counts.unbound++;
      }
    }
  }
  return counts;
}

if (isMainThread) {
  let args = process.argv.slice(2);
  let threads = 1;
  if (args[0] === '--threads') {
    threads = Math.max(1, Number(args[1]));
    args = args.slice(2);
  }
  let counts;
  if (threads === 1) counts = checkAll(args);
  else {
    // Shares in alternation, so each thread gets its part of every directory.
    const shares = Array.from({length: threads}, (_, t) => args.filter((_, i) => i % threads === t));
    const results = await Promise.all(shares.slice(1).map((share) => new Promise((resolve, reject) => {
      const w = new Worker(new URL(import.meta.url), {workerData: share});
      w.once('message', resolve);
      w.once('error', reject);
    })));
    results.push(checkAll(shares[0]));
    counts = results.reduce((a, b) => ({objects: a.objects + b.objects, references: a.references + b.references, unbound: a.unbound + b.unbound, notFound: a.notFound + b.notFound}));
  }
  console.log(`${counts.objects} objects, ${counts.references} references looked up, ${counts.unbound} unbound, ${counts.notFound} DT_NEEDED not found (${threads} thread${threads === 1 ? '' : 's'})`);
} else {
  parentPort.postMessage(checkAll(workerData));
}
