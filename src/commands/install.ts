import {Args, Flags, type Interfaces} from '@oclif/core';
import {CudaenvCommand} from '../cli/base.js';
import {describeVersion} from '../core/store/registry.js';
import {mirrorsFor} from '../core/remote/choose.js';
import {installRelease, type InstallResult} from '../core/remote/install.js';
import {parsePlatform} from '../core/remote/platform.js';
import {parseComponentList, parseProfile, PROFILES} from '../core/remote/profiles.js';
import {abortOnStopSignals} from '../core/remote/interrupt.js';
import {liveDisplay, makeReporter} from '../core/remote/progress.js';
import {refuseForeignStore} from '../core/store/store-owner.js';
import {projectInstallSpec} from '../core/selection/project-spec.js';
import {parseSpec} from '../core/versions/spec.js';
import {logicalCwd} from '../core/selection/select.js';

export default class Install extends CudaenvCommand {
  static override summary = 'Install a CUDA toolkit from NVIDIA\'s redistributable archives.';
  static override description = 'SPEC resolves against the mirror: 12.4 installs the newest 12.4.x. Without SPEC, the release the nearest .cuda-version pins (aliases followed), with its cudnn= setting unless --cudnn is given. Archives are verified (sha256, size), cached in the store, and the toolkit appears under versions/ only once complete.';
  static override examples = [
    '<%= config.bin %> install 12.4',
    {description: 'Install what the project\'s .cuda-version pins (with its cudnn= setting)', command: '<%= config.bin %> install'},
    '<%= config.bin %> install 12.4.1 --profile minimal',
    '<%= config.bin %> install 12 --cudnn 9',
    '<%= config.bin %> install 12.6 --components cuda_nvcc,cuda_cudart,cuda_cccl',
    '<%= config.bin %> install 12.4 --mirror /shared/nvidia-redist',
  ];
  static override args = {spec: Args.string({description: 'release spec: 12, 12.4, 12.4.1 or latest (default: what the nearest .cuda-version pins)'})};
  static override flags = {
    profile: Flags.string({description: 'minimal (nvcc, cudart, cccl), devel (default: + math libraries, nvrtc, nvjitlink, cupti, nvtx, nvml, profiler api) or full (every component but drivers)', options: [...PROFILES]}),
    components: Flags.string({description: 'comma-separated component names (alone: exactly these; with --profile: added to it)'}),
    cudnn: Flags.string({description: 'also install the newest cuDNN matching this spec built for the CUDA major (e.g. 9)'}),
    mirror: Flags.string({description: 'CUDA redist mirror: URL, file:// URL or directory (default: $CUDAENV_MIRROR, the mirror setting, or NVIDIA)'}),
    arch: Flags.string({description: 'linux-x86_64, linux-sbsa or linux-aarch64 (default: the one for this machine and the release; Jetson Thor uses linux-sbsa)'}),
    force: Flags.boolean({description: 'reinstall; the old copy stays usable until the new one is in place'}),
    'allow-driver-components': Flags.boolean({description: 'let --components name driver and machine software (nvidia_driver, cuda_compat, fabricmanager, imex, nvidia_fs, mft...), refused otherwise'}),
    'allow-missing-parts': Flags.boolean({description: 'install a release that has no archive of some part of the profile (cudart, cccl, cublas...) for the platform, without those parts; refused otherwise (ls-remote marks such releases with !)'}),
  };

  async run(): Promise<InstallResult> {
    const {args, flags} = await this.parse(Install);
    // From here on, Ctrl-C, SIGTERM or a closed terminal stops the install as it should: staging removed, a message, 128+N.
    const controller = new AbortController();
    const stopHandlers = abortOnStopSignals(controller);
    try {
      return await this.install(args.spec, flags, controller);
    } finally {
      stopHandlers();
    }
  }

  private async install(specArg: string | undefined, flags: Interfaces.InferredFlags<typeof Install.flags>, controller: AbortController): Promise<InstallResult> {
    refuseForeignStore(this.paths, ['install', ...this.argv]);
    // The one spec grammar of use, local and .cuda-version (12.04 is refused with its spelling, 12.4).
    let spec = specArg === undefined ? undefined : parseSpec(specArg).text;
    let cudnn = flags.cudnn;
    if (spec === undefined) {
      const pinned = projectInstallSpec(this.paths, logicalCwd());
      spec = pinned.spec;
      cudnn ??= pinned.cudnn;
      const via = pinned.aliases.length > 0 ? ` (${[...pinned.aliases, pinned.spec].join(' -> ')})` : '';
      if (!this.jsonEnabled()) process.stderr.write(`cudaenv: installing ${spec}${via}${cudnn === undefined ? '' : ` with cuDNN ${cudnn}`}, as ${pinned.file} pins it\n`);
    }
    const platform = flags.arch ? parsePlatform(flags.arch) : undefined;
    const components = flags.components === undefined ? undefined : parseComponentList(flags.components);
    const profile = flags.profile === undefined ? undefined : parseProfile(flags.profile);
    const mirrors = await mirrorsFor(this.paths, flags.mirror);
    const reporter = await makeReporter({json: this.jsonEnabled(), tty: liveDisplay(process.stderr, process.stdout), write: (line) => process.stderr.write(`${line}\n`)});
    let result: InstallResult;
    try {
      result = await installRelease({
        paths: this.paths, spec, mirror: mirrors.cuda, cudnnMirror: mirrors.cudnn, platform,
        profile, components, allowDriverComponents: flags['allow-driver-components'], allowMissingParts: flags['allow-missing-parts'],
        cudnn, force: flags.force, signal: controller.signal,
        onEvent: (e) => reporter.onEvent(e),
      });
    } catch (error) {
      await reporter.finish(false);
      // A signal is the story, whatever failed after it (a terminal's Ctrl-C reaches xz and tar too).
      throw controller.signal.aborted ? controller.signal.reason : error;
    }
    await reporter.finish(true);
    if (!this.jsonEnabled()) {
      if (result.status === 'already-installed') {
        const site = describeVersion(this.paths, result.version);
        this.log(site?.site
          ? `CUDA ${result.version} is already installed in the site store ${site.store} (your store reaches it at ${result.path}); install your own copy with --force.`
          : `CUDA ${result.version} is already installed in ${result.path} (reinstall with --force).`);
        for (const w of result.warnings) this.warn2(w);
      } else {
        for (const note of result.notes) process.stderr.write(`cudaenv: note: ${note}\n`);
        for (const w of result.warnings) this.warn2(w);
        this.log(`Installed CUDA ${result.version}${result.cudnn ? ` with cuDNN ${result.cudnn}` : ''} in ${result.path}`);
        this.log(`Use it with \`cudaenv global ${result.version}\` or \`cudaenv local ${result.version}\`.`);
      }
    }
    return result;
  }
}
