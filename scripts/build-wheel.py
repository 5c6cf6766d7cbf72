#!/usr/bin/env python3
"""Wraps one cudaenv executable in a Python wheel, as ruff and uv ship theirs: the wheel holds
the executable as a script (cudaenv-VERSION.data/scripts/cudaenv) and its metadata, nothing else,
so `pip install`, `pipx install` and `uv tool install` put `cudaenv` on PATH. No Python code runs
cudaenv: it is the single executable of `npm run build:exe`.

The platform tag is manylinux_GLIBC_ARCH: the executable needs glibc >= GLIBC (the pinned
Node.js's highest GLIBC_ symbol version, scripts/build-exe.mjs GLIBC_FLOOR).

Standard library only (nothing from PyPI). Prints the wheel's path.

usage: build-wheel.py --exe PATH --arch x64|arm64 --version V --glibc 2.28 --out DIR [--source-date EPOCH]
"""
import argparse
import base64
import hashlib
import os
import sys
import time
import zipfile

MACHINE = {'x64': 'x86_64', 'arm64': 'aarch64'}
SUMMARY = 'nvm for CUDA: install, switch and check CUDA toolkits side by side (the single executable; no Node.js needed)'


def record_hash(data: bytes) -> str:
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--exe', required=True)
    p.add_argument('--arch', required=True, choices=sorted(MACHINE))
    p.add_argument('--version', required=True)
    p.add_argument('--glibc', required=True)
    p.add_argument('--out', required=True)
    p.add_argument('--source-date', type=int, default=int(os.environ.get('SOURCE_DATE_EPOCH', '315532800')))
    a = p.parse_args()

    major, minor = a.glibc.split('.')
    tag = f'py3-none-manylinux_{major}_{minor}_{MACHINE[a.arch]}'
    name = f'cudaenv-{a.version}'
    wheel = os.path.join(a.out, f'{name}-{tag}.whl')
    with open(a.exe, 'rb') as f:
        exe = f.read()
    if not exe.startswith(b'\x7fELF'):
        print(f'build-wheel: {a.exe} is not an ELF executable', file=sys.stderr)
        return 1

    dist_info = f'{name}.dist-info'
    files = [
        (f'{name}.data/scripts/cudaenv', exe, 0o755),
        (f'{dist_info}/METADATA', '\n'.join([
            'Metadata-Version: 2.1',
            'Name: cudaenv',
            f'Version: {a.version}',
            f'Summary: {SUMMARY}',
            'License: MIT',
            'Requires-Python: >=3.7',
            'Classifier: Operating System :: POSIX :: Linux',
            'Classifier: Environment :: Console',
            '',
            'cudaenv installs CUDA toolkits side by side from NVIDIA\'s redistributable archives, switches',
            'them per shell, project and machine, and checks that the dynamic loader resolves the CUDA',
            'libraries. This wheel carries the `cudaenv` executable only; run `cudaenv --help`.',
            '',
        ]).encode(), 0o644),
        (f'{dist_info}/WHEEL', '\n'.join([
            'Wheel-Version: 1.0',
            'Generator: cudaenv scripts/build-wheel.py',
            'Root-Is-Purelib: false',
            f'Tag: {tag}',
            '',
        ]).encode(), 0o644),
    ]
    record = ''.join(f'{path},{record_hash(data)},{len(data)}\n' for path, data, _ in files) + f'{dist_info}/RECORD,,\n'
    files.append((f'{dist_info}/RECORD', record.encode(), 0o644))

    date = time.gmtime(max(a.source_date, 315532800))[:6]
    os.makedirs(a.out, exist_ok=True)
    tmp = wheel + '.tmp'
    with zipfile.ZipFile(tmp, 'w', compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        for path, data, mode in files:
            info = zipfile.ZipInfo(path, date_time=date)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    os.replace(tmp, wheel)
    print(wheel)
    return 0


if __name__ == '__main__':
    sys.exit(main())
