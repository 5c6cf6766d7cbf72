import type {ArchiveProgress, Stage} from './archive.js';
import type {InstallEvent, PlannedComponent} from './install.js';
import {formatBytes, formatRate} from '../text/bytes.js';

/** Progress of an install as the user sees it: listr2 on a terminal, plain lines otherwise, nothing with --json. */
export interface Reporter {
  onEvent(event: InstallEvent): void;
  /** Settles the display (tasks not finished are marked failed). */
  finish(ok: boolean): Promise<void>;
}


interface Row {
  plan: PlannedComponent;
  stage: Stage;
  bytes: number;
  started?: number;
  fromCache: boolean;
  note?: string;
}

function describe(row: Row): string {
  const {plan, stage, bytes} = row;
  const elapsed = row.started ? (Date.now() - row.started) / 1000 : 0;
  const rate = elapsed > 0.2 && bytes > 0 ? `, ${formatRate(bytes / elapsed)}` : '';
  const amount = `${formatBytes(bytes)}/${formatBytes(plan.size)}`;
  switch (stage) {
    case 'queued': return `${plan.name} ${plan.version}: waiting (${formatBytes(plan.size)})`;
    case 'download': return `${plan.name} ${plan.version}: download ${amount}${rate}${row.note ? ` (${row.note})` : ''}`;
    case 'extract': return `${plan.name} ${plan.version}: extract ${amount}${row.fromCache ? ' (cached)' : ''}`;
    case 'verify': return `${plan.name} ${plan.version}: verify`;
    case 'merge': return `${plan.name} ${plan.version}: merge`;
    case 'done': return `${plan.name} ${plan.version}: done (${formatBytes(plan.size)}${row.fromCache ? ', from cache' : ''})`;
    case 'failed': return `${plan.name} ${plan.version}: failed`;
  }
}

class Rows {
  readonly rows = new Map<string, Row>();
  label = '';

  update(event: InstallEvent): Row | undefined {
    if (event.type === 'plan') {
      this.label = event.label;
      for (const plan of event.components) this.rows.set(plan.name, {plan, stage: 'queued', bytes: 0, fromCache: false});
      return undefined;
    }
    if (event.type !== 'progress') return undefined;
    const row = this.rows.get(event.component);
    if (!row) return undefined;
    const p: ArchiveProgress = event.progress;
    if (p.stage === 'download' || p.stage === 'extract') row.started ??= Date.now();
    row.stage = p.stage;
    row.bytes = p.bytes;
    row.fromCache = p.fromCache;
    row.note = p.note;
    return row;
  }
}

/** One line per stage change (and per retry): readable in CI logs. */
export class PlainReporter implements Reporter {
  private readonly rows = new Rows();
  private readonly last = new Map<string, string>();

  constructor(private readonly write: (line: string) => void) {}

  onEvent(event: InstallEvent): void {
    if (event.type === 'plan') {
      this.rows.update(event);
      for (const line of planLines(event)) this.write(line);
      return;
    }
    if (event.type === 'waiting') {
      const o = event.owner;
      this.write(`Waiting for ${o ? `process ${o.pid} on ${o.hostname} (${o.purpose})` : 'another process'} to finish...`);
      return;
    }
    if (event.type === 'finishing') return;
    const row = this.rows.update(event);
    if (!row || row.stage === 'queued') return;
    const key = `${row.stage}${row.note ?? ''}`;
    if (this.last.get(row.plan.name) === key) return;
    this.last.set(row.plan.name, key);
    this.write(describe(row));
  }

  async finish(_ok: boolean): Promise<void> {
    // plain lines need no settling
  }
}

/**
 * What an install prints before its progress, live display or plain lines alike: which of NVIDIA's
 * platforms the archives are for, and why (a Jetson or Thor user must be able to tell), then the
 * release, its components and their total size.
 */
export function planLines(event: Extract<InstallEvent, {type: 'plan'}>): string[] {
  const total = event.components.reduce((s, c) => s + c.size, 0);
  return [
    `Platform: ${event.platform} (${event.platformWhy})`,
    `Installing CUDA ${event.label}: ${event.components.map((c) => c.name).join(', ')} (${formatBytes(total)})`,
  ];
}

/** listr2's renderer: one live line per component with bytes, rate and stage. */
export class ListrReporter implements Reporter {
  private readonly rows = new Rows();
  /** Settled by install events; created up front because a component may finish before listr starts its task. */
  private readonly outcomes = new Map<string, {promise: Promise<void>; resolve: () => void; reject: (e: Error) => void; settled: boolean}>();
  private readonly titles = new Map<string, (title: string) => void>();
  private running?: Promise<unknown>;
  private ticker?: NodeJS.Timeout;

  constructor(private readonly listr: typeof import('listr2'), private readonly write: (line: string) => void, private readonly renderer?: 'silent') {}

  onEvent(event: InstallEvent): void {
    if (event.type === 'waiting') {
      const o = event.owner;
      this.write(`Waiting for ${o ? `process ${o.pid} on ${o.hostname} (${o.purpose})` : 'another process'} to finish...`);
      return;
    }
    if (event.type === 'plan') {
      // Written before listr2 starts drawing: the lines stay above the live display.
      for (const line of planLines(event)) this.write(line);
      this.rows.update(event);
      for (const row of this.rows.rows.values()) {
        let resolve!: () => void;
        let reject!: (e: Error) => void;
        const promise = new Promise<void>((res, rej) => {
          resolve = res;
          reject = rej;
        });
        promise.catch(() => undefined);
        this.outcomes.set(row.plan.name, {promise, resolve, reject, settled: false});
      }
      const {Listr} = this.listr;
      const tasks = [...this.rows.rows.values()].map((row) => ({
        title: describe(row),
        task: (_ctx: unknown, task: {title: string}) => {
          this.titles.set(row.plan.name, (t) => {
            task.title = t;
          });
          task.title = describe(row);
          return this.outcomes.get(row.plan.name)!.promise;
        },
      }));
      // registerSignalListeners off: listr2's own SIGINT handler calls process.exit(127) before
      // cudaenv's runs, so Ctrl-C at a terminal left the staging directory and said nothing. The
      // install's handler (src/commands/install.ts) stops it as it does without a terminal.
      const list = this.renderer
        ? new Listr(tasks, {concurrent: true, exitOnError: false, registerSignalListeners: false, renderer: this.renderer})
        : new Listr(tasks, {concurrent: true, exitOnError: false, registerSignalListeners: false, rendererOptions: {collapseErrors: false}});
      this.running = list.run().catch(() => undefined);
      // Rates change even when no event arrives.
      this.ticker = setInterval(() => {
        for (const row of this.rows.rows.values()) this.titles.get(row.plan.name)?.(describe(row));
      }, 250);
      this.ticker.unref();
      return;
    }
    const row = this.rows.update(event);
    if (!row) return;
    this.titles.get(row.plan.name)?.(describe(row));
    if (row.stage === 'done') this.settle(row.plan.name);
    if (row.stage === 'failed') this.settle(row.plan.name, new Error(describe(row)));
  }

  private settle(name: string, error?: Error): void {
    const o = this.outcomes.get(name);
    if (!o || o.settled) return;
    o.settled = true;
    if (error) o.reject(error);
    else o.resolve();
  }

  async finish(ok: boolean): Promise<void> {
    if (this.ticker) clearInterval(this.ticker);
    for (const [name, row] of this.rows.rows) {
      if (ok || row.stage === 'done') this.settle(name);
      else this.settle(name, new Error(`${row.plan.name}: ${row.stage === 'failed' ? 'failed' : 'stopped'}`));
    }
    await this.running;
  }
}

/**
 * Whether the live display can be drawn: listr2 draws it on stdout, wrapped to stdout's width,
 * and progress belongs where the plain lines go, on stderr. So both must be a terminal that knows
 * its width. With stdout redirected (`cudaenv install 12.4 > log`) listr2's fallback wrote its
 * lines into the file and nothing reached the terminal; a pty opened without a size (`script` in
 * a CI job, `docker exec -t` before its first resize) reports 0 columns, and wrapping to that put
 * every character on a line of its own. Plain lines on stderr in both cases.
 */
export function liveDisplay(stderr: {isTTY?: boolean; columns?: number}, stdout: {isTTY?: boolean; columns?: number}): boolean {
  const sized = (s: {isTTY?: boolean; columns?: number}): boolean => s.isTTY === true && (s.columns ?? 0) > 0;
  return sized(stderr) && sized(stdout);
}

export async function makeReporter(options: {json: boolean; tty: boolean; write: (line: string) => void}): Promise<Reporter> {
  if (options.json) return {onEvent: () => undefined, finish: async () => undefined};
  if (!options.tty) return new PlainReporter(options.write);
  return new ListrReporter(await import('listr2'), options.write);
}
