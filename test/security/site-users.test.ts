/**
 * Issue 45 as a cluster has it: the site's store is root's, reached by every user through a
 * read-only mount (here a read-only bind mount of the administrator's side of it), and alice, a
 * real unprivileged user (useradd in the sandbox, sandbox.ts), keeps her own store over it. In real
 * bash, zsh and fish run as alice: the site's global default applies, `cudaenv use` of a site
 * version, the shims, her own version of a label the site also has winning, a version the
 * administrator adds (a rename into versions/) seen at her next prompt, one he uninstalls giving
 * one line and the fallback; nothing of hers lands in the site store and no command of hers fails
 * on the read-only mount.
 */
import {expect} from '@jest/globals';
import {rcLine} from '../../src/core/shell/shell.js';
import {have} from '../core/shell/shell-harness.js';
import {testIf} from '../helpers/skip.js';
import {runSandbox, SANDBOX_NEEDS, SANDBOX_OK} from './sandbox.js';

type Shell = 'bash' | 'zsh' | 'fish';

/**
 * The site (root's, written on its own side: $SITE_RW, as an NFS server's) and its read-only view
 * $SITE that users mount; alice's store with her own 11.8.0 (an nvcc that says it is hers).
 */
const SETUP = String.raw`
SITE_RW=/opt/cudaenv-site-rw
SITE=/opt/cudaenv-site
admin() { env -i HOME=/root PATH="$BASEPATH" LANG=C.UTF-8 CUDAENV_DIR="$SITE_RW" CUDAENV_SITE_DIRS= "$CE" "$@"; }
make_toolkit "$SITE_RW/versions/11.8.0" root:root 11.8.0
make_toolkit "$SITE_RW/versions/12.4.1" root:root 12.4.1
admin rehash >/dev/null && admin global 12 >/dev/null && admin alias stable 11.8 >/dev/null || echo ADMIN-FAILED
# What the administrator installs later, staged beside versions/ (an install ends with one rename).
make_toolkit "$SITE_RW/tmp/stage" root:root 12.6.0
mkdir -p "$SITE"
mount --bind "$SITE_RW" "$SITE" && mount -o remount,ro,bind "$SITE" || exit 90
touch "$SITE/probe" 2>/dev/null && echo SITE-WRITABLE
A="$T/home/alice"
as_alice mkdir -p "$A/.cudaenv/versions" "$A/proj" "$A/.local/share/fish/generated_completions" "$A/.config/fish"
make_toolkit "$A/.cudaenv/versions/11.8.0" alice:alice 11.8.0
printf '#!/bin/sh\necho "alice own nvcc 11.8.0"\n' > "$A/.cudaenv/versions/11.8.0/bin/nvcc"
as_alice sh -c 'echo 12.6 > "$HOME/proj/.cuda-version"'
# The administrator's actions alice's shell asks for (sudo, as a site's change would come from elsewhere).
cat > "$T/site-admin" <<ADMIN
#!/bin/sh
set -e
case "\$1" in
  add) mv "$SITE_RW/tmp/stage" "$SITE_RW/versions/12.6.0"; env -i HOME=/root PATH="$BASEPATH" CUDAENV_DIR="$SITE_RW" CUDAENV_SITE_DIRS= "$CE" rehash >/dev/null ;;
  remove) env -i HOME=/root PATH="$BASEPATH" CUDAENV_DIR="$SITE_RW" CUDAENV_SITE_DIRS= "$CE" uninstall 12.4.1 >/dev/null ;;
esac
ADMIN
chmod 755 "$T/site-admin"
echo "alice ALL=(root) NOPASSWD: $T/site-admin" > /etc/sudoers.d/cudaenv-site
chmod 0440 /etc/sudoers.d/cudaenv-site
find "$SITE_RW" -printf '%P %y %U %m\n' | sort > "$T/site-before"
# The hook looks at the site at each prompt (by default once in 10 s: test/core/shell/site-stores.test.ts).
alice_shell() {
  setpriv --reuid=alice --regid=alice --init-groups env -i HOME="$A" PATH="$(dirname "$CE"):$BASEPATH" LANG=C.UTF-8 TERM=dumb \
    CUDAENV_SITE_DIRS="$SITE" CUDAENV_SITE_CHECK_INTERVAL=0 ZDOTDIR="$A" XDG_CONFIG_HOME="$A/.config" "$@"
}
`;

function rc(shell: Shell): string {
  const line = rcLine(shell);
  if (shell === 'bash') return `cat > "$A/.bashrc" <<'RC'\nPS1='$ '\n${line}\nRC`;
  if (shell === 'zsh') return `cat > "$A/.zshrc" <<'RC'\nPS1='%% '\nunsetopt zle\n${line}\nRC`;
  return `cat > "$A/.config/fish/config.fish" <<'RC'\nfunction fish_prompt; echo -n '> '; end\nfunction fish_title; end\nfunction fish_greeting; end\n${line}\nRC`;
}

function scenario(shell: Shell): string {
  // fish reading its commands from a file runs no prompt between them: the test emits it.
  const p = shell === 'fish' ? '; emit fish_prompt' : '';
  const lines = [
    ...(shell === 'fish' ? ['emit fish_prompt'] : []),
    'echo "START=$CUDA_HOME"',
    'cudaenv use 11.8 2>/dev/null; echo "OWN=$CUDA_HOME"',
    'nvcc --version',
    'cudaenv use 12.4 2>/dev/null; echo "SITE=$CUDA_HOME"',
    'nvcc --version | tail -n 1',
    'env CUDAENV_VERSION=stable "$HOME/.cudaenv/shims/nvcc" --version',
    'env CUDAENV_VERSION=12.4.1 "$HOME/.cudaenv/shims/nvcc" --version | tail -n 1',
    'cudaenv deactivate 2>/dev/null',
    `cd "$HOME/proj"${p}`,
    'echo "MISSING=$CUDA_HOME"',
    `sudo -n "$T/site-admin" add${p}`,
    'echo "ADDED=$CUDA_HOME"',
    'nvcc --version | tail -n 1',
    `cd "$HOME"${p}`,
    'cudaenv use 12.4 2>/dev/null; echo "USED=$CUDA_HOME"',
    `sudo -n "$T/site-admin" remove${p}`,
    `echo "FALLBACK=$CUDA_HOME"${p}`,
    'echo "FINAL=$CUDA_HOME"',
  ];
  const shellArgs = shell === 'bash' ? `bash --rcfile "$A/.bashrc" -i` : `${shell} -i`;
  return `${SETUP}
${rc(shell)}
chown -R alice:alice "$A"
cat > "$T/input" <<'IN'
${lines.join('\n').replaceAll('$T', '__T__')}
exit
IN
sed -i "s|__T__|$T|g" "$T/input"
(cd "$A" && alice_shell ${shellArgs} < "$T/input") 2> "$T/stderr"
echo "SHELL-EXIT=$?"
grep -o 'cudaenv: .*' "$T/stderr" | sed 's/^/ERR: /'
grep -i 'read-only\\|permission denied\\|EROFS\\|EACCES' "$T/stderr" | sed 's/^/BAD: /'
find "$SITE_RW" -user alice | sed 's/^/ALICE-FILE: /'
echo "CHECK-CACHE=$(cd "$A/.cudaenv/switch" && ls check-* | tr '\n' ' ')"
echo "SITE-CHECKS=$(find "$SITE_RW" -name 'check-*' | wc -l)"
echo "STORE-OWNERS=$(find "$A/.cudaenv" ! -user alice | wc -l)"
echo "SITE-LINK=$(readlink "$A/.cudaenv/versions/12.6.0")"
echo "OWN-IS-DIR=$(test -d "$A/.cudaenv/versions/11.8.0" && ! test -L "$A/.cudaenv/versions/11.8.0" && echo yes)"
`;
}

for (const shell of ['bash', 'zsh', 'fish'] as Shell[]) {
  testIf(SANDBOX_OK && have(shell), SANDBOX_OK ? `needs ${shell} (apt-get install ${shell})` : SANDBOX_NEEDS)(
    `${shell} as alice over root's read-only site store: site versions, shims, her own winning, the site adding and removing a version`, () => {
      const r = runSandbox(scenario(shell), {timeoutMs: 180_000});
      // fish switches bracketed paste on and off around each command it reads, even with TERM=dumb.
      const out = r.stdout.replaceAll(/\x1b\[\?2004[hl]/g, '');
      const v = (label: string) => expect.stringContaining(`/home/alice/.cudaenv/versions/${label}`);
      const value = (key: string) => out.split('\n').find((l) => l.startsWith(`${key}=`))?.slice(key.length + 1);
      expect(out).not.toContain('ADMIN-FAILED');
      expect(out).not.toContain('SITE-WRITABLE');
      expect(out).toContain('SHELL-EXIT=0');
      // The site's global default (12) in a new shell: the site's 12.4.1, through alice's store.
      expect(value('START')).toEqual(v('12.4.1'));
      // 11.8.0 is both alice's and the site's: hers wins, in `use` as in the shims.
      expect(value('OWN')).toEqual(v('11.8.0'));
      expect(out).toMatch(/OWN=.*\nalice own nvcc 11\.8\.0\n/);
      expect(value('SITE')).toEqual(v('12.4.1'));
      expect(out).toMatch(/SITE=.*\nCuda compilation tools, V12\.4\.1\n/);
      // The shims (plain sh): the site's alias `stable` -> 11.8 is alice's 11.8.0; 12.4.1 the site's.
      expect(out).toMatch(/\nalice own nvcc 11\.8\.0\nCuda compilation tools, V12\.4\.1\n/);
      // .cuda-version asks for 12.6, which nobody has yet; the administrator adds it; the next prompt uses it.
      expect(value('MISSING')).toBe('');
      expect(value('ADDED')).toEqual(v('12.6.0'));
      expect(out).toMatch(/ADDED=.*\nCuda compilation tools, V12\.6\.0\n/);
      // The administrator uninstalls 12.4.1 while alice's shell uses it: one line, then the fallback
      // (the site's global 12, now the site's 12.6.0), never a trace of errors.
      expect(value('USED')).toEqual(v('12.4.1'));
      expect(value('FALLBACK')).toEqual(v('12.6.0'));
      expect(value('FINAL')).toEqual(v('12.6.0'));
      // Besides the switch-time check's one line per switch (`CUDA 12.4.1: all 1 library resolves`).
      const errs = out.split('\n').filter((l) => l.startsWith('ERR: ') && !/: all \d+ librar(y|ies) resolves?$/.test(l));
      expect(out).toContain('ERR: cudaenv: CUDA 12.4.1: all 1 library resolves');
      expect(errs).toEqual([
        expect.stringContaining('ERR: cudaenv: CUDA 12.6 (set by '),
        expect.stringMatching(/^ERR: cudaenv: CUDA 12\.4\.1 was removed \(.*\/home\/alice\/\.cudaenv\/versions\/12\.4\.1 is gone\); this shell no longer uses it and falls back/),
      ]);
      expect(out.split('\n').filter((l) => l.startsWith('BAD: ') || l.startsWith('ALICE-FILE: '))).toEqual([]);
      expect(value('STORE-OWNERS')).toBe('0');
      // check's switch-time cache: alice's store holds the site versions' entries; the site none.
      expect(value('CHECK-CACHE')).toMatch(/12\.4\.1.*12\.6\.0/);
      expect(value('SITE-CHECKS')).toBe('0');
      expect(value('SITE-LINK')).toBe('/opt/cudaenv-site/versions/12.6.0');
      expect(value('OWN-IS-DIR')).toBe('yes');
    }, 200_000);
}
