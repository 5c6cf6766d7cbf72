import {existsSync, readFileSync} from 'node:fs';
import {join} from 'node:path';
import {buildLib} from '../fixtures.js';

/**
 * An LD_PRELOAD spy of dlopen, the oracle of what a real process loads at run time and who asks:
 * its dlopen logs the name and the object its caller's return address lies in (dladdr), then
 * jumps (not calls) to the real dlopen, so that the real one still sees the caller's return
 * address and searches as for that caller (its DT_RUNPATH; a call from the spy would search as
 * for the spy). x86-64 only. Lines go to $DLOPEN_SPY_LOG (appended), else to standard error:
 * "dlopen-spy<TAB>CALLER<TAB>NAME".
 */
export function buildDlopenSpy(dir: string): string {
  return buildLib({out: join(dir, 'libdlopen-spy.so'), extra: ['-ldl'], source: `
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static void *real;
__attribute__((visibility("hidden"))) void *spy_log(const char *name, int flags, void *ret) {
  (void)flags;
  if (!real) real = dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34");
  if (!real) real = dlsym(RTLD_NEXT, "dlopen");
  Dl_info info;
  const char *who = dladdr(ret, &info) && info.dli_fname ? info.dli_fname : "?";
  const char *log = getenv("DLOPEN_SPY_LOG");
  int fd = log ? open(log, O_WRONLY | O_APPEND | O_CREAT, 0600) : 2;
  if (fd >= 0) {
    dprintf(fd, "dlopen-spy\\t%s\\t%s\\n", who, name ? name : "(null)");
    if (log) close(fd);
  }
  return real;
}
__asm__(".globl dlopen\\n.type dlopen,@function\\ndlopen:\\n"
        "push %rdi\\npush %rsi\\nsub $8,%rsp\\nmov 24(%rsp),%rdx\\ncall spy_log\\n"
        "add $8,%rsp\\npop %rsi\\npop %rdi\\njmp *%rax\\n.size dlopen,.-dlopen\\n");
`});
}

/** The spy's lines: each dlopen's caller (as the process named it) and name, in order. */
export function spyLog(text: string): Array<{caller: string; name: string}> {
  return text.split('\n').flatMap((line) => {
    const [tag, caller, name] = line.split('\t');
    return tag === 'dlopen-spy' && caller !== undefined && name !== undefined ? [{caller, name}] : [];
  });
}

export function readSpyLog(path: string): Array<{caller: string; name: string}> {
  return existsSync(path) ? spyLog(readFileSync(path, 'utf8')) : [];
}
