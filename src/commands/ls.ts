import {Flags} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {colorEnabled, paint} from '../cli/color.js';
import {quoteSh} from '../core/text/quote.js';
import {listAliases, listSiteAliases, listVersions, readEffectiveGlobal} from '../core/store/registry.js';
import {detectToolkitVersion, scanSystemToolkits} from '../core/versions/detect.js';
import {selectVersion, describeOrigin} from '../core/selection/select.js';
import {realpathSync} from 'node:fs';

interface LsResult {
  versions: Array<{version: string; kind: string; path: string; target: string | null; broken: boolean; active: boolean; store: string; site: boolean}>;
  active: {version: string | null; spec: string; origin: string} | null;
  aliases: Array<{name: string; spec: string; store?: string}>;
  global: string | null;
  /** The site stores beneath the user's (issue 45), in the order they are searched. */
  sites: string[];
  system?: Array<{path: string; version: string | null; registered: boolean; links: string[]; command: string | null}>;
}

export default class Ls extends CudaenvCommand {
  static override summary = 'List installed and registered CUDA versions.';
  static override aliases = ['list'];
  static override examples = ['<%= config.bin %> ls', '<%= config.bin %> ls --system', '<%= config.bin %> ls --json'];
  static override flags = {system: Flags.boolean({description: 'also scan /usr/local/cuda*, /opt/cuda* and /usr/lib/cuda for unregistered toolkits'})};

  async run(): Promise<LsResult> {
    const {flags} = await this.parse(Ls);
    const versions = listVersions(this.paths);
    let active: LsResult['active'] = null;
    try {
      const sel = selectVersion(this.paths);
      active = {version: sel.system ? 'system' : (sel.label ?? null), spec: sel.spec.text, origin: describeOrigin(sel.origin)};
    } catch (error) {
      this.warn2((error as Error).message);
    }
    const result: LsResult = {
      versions: versions.map((v) => ({
        version: v.label, kind: v.kind, path: v.path, target: v.target ?? null, broken: v.broken,
        active: active?.version === v.label, store: v.store, site: v.site,
      })),
      active,
      aliases: [...listAliases(this.paths), ...listSiteAliases(this.paths).map((a) => ({...a, store: 'site'}))],
      global: readEffectiveGlobal(this.paths)?.spec ?? null,
      sites: [...new Set(versions.filter((v) => v.site).map((v) => v.store))],
    };
    if (flags.system) {
      const byTarget = new Map(versions.flatMap((v) => (v.target ? [[safeRealpath(v.target), v.label] as const] : [])));
      // /usr/local/cuda -> /usr/local/cuda-13.0 is one toolkit reached two ways: listed once, at
      // the directory itself, with the links that lead to it.
      const groups = new Map<string, string[]>();
      for (const dir of scanSystemToolkits()) {
        const real = safeRealpath(dir);
        groups.set(real, [...(groups.get(real) ?? []), dir]);
      }
      result.system = [...groups].map(([real, dirs]) => {
        const path = dirs.includes(real) ? real : dirs[0]!;
        const label = byTarget.get(real);
        const version = label ?? detectToolkitVersion(real).version ?? null;
        return {
          path, version, registered: label !== undefined, links: dirs.filter((d) => d !== path),
          command: label !== undefined ? null : `cudaenv add ${quoteSh(path)}${version ? '' : ' --as X.Y.Z'}`,
        };
      });
    }
    if (!this.jsonEnabled()) this.render(result);
    return result;
  }

  private render(r: LsResult): void {
    if (r.versions.length === 0) this.log('No CUDA versions installed. Install one with `cudaenv install 12.4` or register one with `cudaenv add PATH`.');
    const color = colorEnabled(process.stdout);
    const width = Math.max(10, ...r.versions.map((v) => v.version.length)); // 12.4.1-local is longer than a release
    for (const v of r.versions) {
      const mark = v.active ? '*' : ' ';
      const what = v.site ? `(site store ${v.store})${v.broken ? ` ${paint('(missing!)', 'red', color)}` : ''}`
        : v.kind === 'registered' ? `-> ${v.target}${v.broken ? ` ${paint('(missing!)', 'red', color)}` : ''}`
        : v.broken ? `${paint('(not a toolkit: empty, no bin/ or lib)', 'red', color)} remove it: cudaenv uninstall ${v.version}` : '';
      const line = `${mark} ${v.version.padEnd(width)} ${what}`.trimEnd();
      this.log(v.active ? paint(paint(line, 'green', color), 'bold', color) : line);
    }
    if (r.active) this.log(`\nactive: ${r.active.version ? paint(r.active.version, 'green', color) : paint(`${r.active.spec} (not installed)`, 'red', color)} (${r.active.origin})`);
    for (const a of r.aliases) this.log(`alias ${a.name} -> ${a.spec}${a.store ? ' (site)' : ''}`);
    if (r.system) {
      this.log('\nToolkits on this machine:');
      if (r.system.length === 0) this.log('  none found in /usr/local/cuda*, /opt/cuda*, /usr/lib/cuda');
      for (const s of r.system) {
        const links = s.links.length > 0 ? ` (also ${s.links.join(', ')})` : '';
        this.log(`  ${s.path}${links} ${s.version ?? '(version unknown)'} ${s.registered ? '(registered)' : `— register with: ${s.command}`}`);
      }
    }
  }
}

function safeRealpath(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}
