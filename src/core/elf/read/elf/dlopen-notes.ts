import {ElfError} from './errors.js';
import {readProgramHeaders, type ParsedHeader} from './header.js';
import {PT_NOTE} from './properties.js';
import {withSections, type OpenedSections} from './sections.js';

/**
 * ELF dlopen metadata: the loads a library declares it makes with dlopen, in `.note.dlopen` notes
 * (the UAPI group's "ELF dlopen metadata" specification, which systemd's ELF_NOTE_DLOPEN macro
 * writes and Debian's dh-dlopenlibdeps and `systemd-analyze dlopen-metadata` read). Each note is
 * an ELF note of owner "FDO" and type 0x407c0c0a whose descriptor is a JSON array of objects:
 * `soname` (the names the library tries, in order: alternatives), `feature`, `description` and
 * `priority` ("required", "recommended" (the default) or "suggested"). The note is 4-byte aligned,
 * its JSON NUL-terminated and padded with NULs to 4 bytes.
 */
export const NT_FDO_DLOPEN_METADATA = 0x407c0c0a;
export const DLOPEN_NOTE_OWNER = 'FDO';

export type DlopenPriority = 'required' | 'recommended' | 'suggested';

export interface DlopenNote {
  /** The names the library passes to dlopen, in the order it tries them (one is enough). */
  soname: string[];
  feature: string | null;
  description: string | null;
  priority: DlopenPriority;
}

/** Real notes are a few hundred bytes each; a section is read only this far. */
const MAX_NOTES_BYTES = 256 * 1024;
const PRIORITIES: readonly DlopenPriority[] = ['required', 'recommended', 'suggested'];

/**
 * The dlopen notes of the ELF object at `path`, in file order; empty when it declares none. From
 * the sections named `.note.dlopen` (their bytes only, at most 256 KB each), else, in a file without
 * section headers, its PT_NOTE segments. A note of another owner or type is passed over; a note of
 * this owner and type whose JSON does not follow the specification is an ElfError that says what
 * is wrong with it.
 */
export function readDlopenNotes(path: string): DlopenNote[] {
  try {
    return withSections(path, (o) => dlopenNotesIn(o));
  } catch (error) {
    if (error instanceof ElfError) throw error;
    throw new ElfError(path, 'malformed', `cannot read its dlopen notes: ${(error as Error).message}`, {cause: error});
  }
}

/** readDlopenNotes of an object already opened (sections.ts withSections). */
export function dlopenNotesIn({file, h, sections}: OpenedSections): DlopenNote[] {
  const path = file.path;
  try {
    const ranges = sections.length > 0
      ? sections.filter((s) => s.name === '.note.dlopen' && s.size > 0).map((s) => [s.offset, s.size] as const)
      : readProgramHeaders(file, h).filter((p) => p.type === PT_NOTE && p.filesz > 0).map((p) => [p.offset, p.filesz] as const);
    const notes: DlopenNote[] = [];
    for (const [offset, size] of ranges) {
      const len = Math.min(size, MAX_NOTES_BYTES, Math.max(0, file.size - offset));
      if (len < 12) continue;
      notes.push(...notesIn(file.read(offset, len, '.note.dlopen'), h, path));
    }
    return notes;
  } catch (error) {
    if (error instanceof ElfError) throw error;
    throw new ElfError(path, 'malformed', `cannot read its dlopen notes: ${(error as Error).message}`, {cause: error});
  }
}

function notesIn(buf: Buffer, h: ParsedHeader, path: string): DlopenNote[] {
  const u32 = (at: number) => (h.littleEndian ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
  const pad4 = (n: number) => Math.ceil(n / 4) * 4;
  const out: DlopenNote[] = [];
  for (let at = 0; at + 12 <= buf.length;) {
    const namesz = u32(at);
    const descsz = u32(at + 4);
    const type = u32(at + 8);
    const desc = at + 12 + pad4(namesz);
    // A note cut off by the end of its section (or by the read limit): nothing more to read.
    if (desc + descsz > buf.length) break;
    const owner = buf.toString('latin1', at + 12, at + 12 + namesz).replace(/\0+$/, '');
    if (owner === DLOPEN_NOTE_OWNER && type === NT_FDO_DLOPEN_METADATA) {
      out.push(...parseEntries(buf.toString('utf8', desc, desc + descsz).replace(/\0+$/, ''), path));
    }
    at = desc + pad4(descsz);
  }
  return out;
}

function parseEntries(json: string, path: string): DlopenNote[] {
  const bad = (what: string): never => {
    throw new ElfError(path, 'malformed', `its .note.dlopen note (owner FDO, type 0x407c0c0a) ${what}: ${json.length > 200 ? `${json.slice(0, 200)}...` : json}`,
      {hint: 'The library\'s dlopen metadata does not follow the ELF dlopen metadata specification (a JSON array of objects with a "soname" array); report it to whoever built the library.'});
  };
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    return bad(`is not JSON (${(error as Error).message})`);
  }
  if (!Array.isArray(value)) return bad('is not a JSON array');
  return value.map((entry: unknown, i): DlopenNote => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return bad(`entry ${i} is not an object`);
    const e = entry as Record<string, unknown>;
    const soname = e.soname;
    if (!Array.isArray(soname) || soname.length === 0 || !soname.every((s) => typeof s === 'string' && s.length > 0)) {
      return bad(`entry ${i} has no "soname" array of names`);
    }
    const text = (k: string): string | null => {
      if (e[k] === undefined) return null;
      return typeof e[k] === 'string' ? e[k] : bad(`entry ${i}'s "${k}" is not a string`);
    };
    const priority = e.priority === undefined ? 'recommended' : e.priority;
    if (!PRIORITIES.includes(priority as DlopenPriority)) return bad(`entry ${i}'s "priority" is ${JSON.stringify(priority)}, not one of ${PRIORITIES.join(', ')}`);
    return {soname: soname as string[], feature: text('feature'), description: text('description'), priority: priority as DlopenPriority};
  });
}
