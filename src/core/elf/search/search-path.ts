/**
 * Dynamic string tokens and search-path lists as ld.so parses them (elf-loader-spec.md §1.4, §1.6).
 */
import {inImage} from '../read/machine/sysroot.js';

export interface DstValues {
  /** The object's origin directory (null: unknown, so a token using it drops the element). */
  origin: string | null;
  platform: string;
  lib: string;
}

const TOKENS = ['ORIGIN', 'PLATFORM', 'LIB'] as const;

function tokenValue(token: (typeof TOKENS)[number], values: DstValues): string | null {
  if (token === 'ORIGIN') return values.origin;
  if (token === 'PLATFORM') return values.platform;
  return values.lib;
}

/**
 * Expands $ORIGIN, $PLATFORM, $LIB (and the ${NAME} forms). `$NAME` only counts when the next
 * character is not [A-Za-z0-9_]; anything else after `$` stays literal. Returns null when a
 * recognised token has no value (the element is then dropped), and whether any token occurred.
 */
export function expandDst(text: string, values: DstValues): {value: string | null; hadToken: boolean} {
  if (!text.includes('$')) return {value: text, hadToken: false};
  let out = '';
  let hadToken = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c !== '$') {
      out += c;
      i++;
      continue;
    }
    let matched: {token: (typeof TOKENS)[number]; length: number} | undefined;
    for (const token of TOKENS) {
      if (text.startsWith(`{${token}}`, i + 1)) {
        matched = {token, length: token.length + 3};
        break;
      }
      if (text.startsWith(token, i + 1) && !/[A-Za-z0-9_]/.test(text[i + 1 + token.length] ?? '')) {
        matched = {token, length: token.length + 1};
        break;
      }
    }
    if (!matched) {
      out += c;
      i++;
      continue;
    }
    hadToken = true;
    const value = tokenValue(matched.token, values);
    if (value === null) return {value: null, hadToken};
    out += value;
    i += matched.length;
  }
  return {value: out, hadToken};
}

/**
 * LD_LIBRARY_PATH's entries as ld.so splits them (elf/dl-load.c fillin_rpath: ':' and ';'),
 * empty entries kept: each is the current directory. For fixes that rewrite the variable.
 */
export function splitLdLibraryPath(value: string | undefined): string[] {
  return value === undefined || value === '' ? [] : value.split(/[:;]/);
}

/** A search-list element in words: an empty one is the current directory, which users rarely mean. */
export function describeElement(element: string, cwd: string): string {
  return element === '' ? `"" (empty: the current directory, ${cwd})` : element;
}

/** One directory of a search list: the expanded directory (ending in '/', '' = cwd) and the element as written. */
export interface SearchDir {
  dir: string;
  element: string;
}

/**
 * Splits an RPATH/RUNPATH (separators ':') or LD_LIBRARY_PATH (':' and ';') into directories:
 * an empty element means the current directory, a token without value drops its element,
 * trailing slashes become one, and repeated directories are removed (first kept). `root`: a system
 * image's root (CUDAENV_SYSROOT), where an absolute directory is one of the image (inImage).
 */
export function parseSearchList(value: string | null | undefined, values: DstValues, kind: 'dt' | 'env', root = ''): SearchDir[] {
  if (value === null || value === undefined || value === '') return [];
  // Every process of a check maps the same libraries with the same RUNPATH and origin: each list
  // is parsed once (the lists are shared, and no caller changes them).
  const key = `${kind}\0${root}\0${values.origin ?? '\u0001'}\0${values.platform}\0${values.lib}\0${value}`;
  let out = parsedLists.get(key);
  if (out === undefined) {
    if (parsedLists.size >= 4096) parsedLists.clear();
    parsedLists.set(key, out = parse(value, values, kind, root));
  }
  return out;
}

const parsedLists = new Map<string, SearchDir[]>();

function parse(value: string, values: DstValues, kind: 'dt' | 'env', root: string): SearchDir[] {
  const elements = value.split(kind === 'env' ? /[:;]/ : ':');
  const out: SearchDir[] = [];
  const seen = new Set<string>();
  for (const element of elements) {
    let dir: string;
    if (element === '') {
      dir = '';
    } else {
      const {value: expanded} = expandDst(element, values);
      if (expanded === null || expanded === '') continue;
      const trimmed = expanded.replace(/\/+$/, '');
      dir = trimmed === '' ? `${root}/` : `${trimmed.startsWith('/') ? inImage(root, trimmed) : trimmed}/`;
    }
    if (seen.has(dir)) continue;
    seen.add(dir);
    out.push({dir, element});
  }
  return out;
}
