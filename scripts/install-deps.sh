#!/bin/bash
# Install everything the vbblk build and guest tests need (Debian 12).
# Idempotent: runs apt-get update/install only when something is missing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PKGS=(
	qemu-system-x86 qemu-utils
	linux-image-amd64 linux-headers-amd64 linux-source-6.1
	fio busybox-static cpio kmod e2fsprogs util-linux
	sparse python3 gcc make libc6-dev liburing-dev bc bison flex libelf-dev libssl-dev
	coreutils findutils python3-matplotlib sg3-utils
	nbdkit nbdkit-plugin-dev
	dkms udev openssl
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	# scripts/debian-kernel.sh: Debian's 7.2 configuration asks for BTF
	pahole xz-utils
	# tests/lib/bootimg.py: unpack zstd kernels (6.12, 7.2) for PVH boot
	zstd
	# make deb (scripts/build-deb.sh); the debpkg test checks it with lintian
	debhelper dh-dkms dpkg-dev lintian
)

SUDO=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps: need root (or sudo)" >&2; exit 1; }
	SUDO=sudo
fi

missing=()
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "install-deps: installing: ${missing[*]}"
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
	echo "install-deps: all ${#PKGS[@]} packages present"
fi

# The guest kernel: a /boot/vmlinuz-<ver>-amd64 with matching modules and headers.
ok=
for k in /boot/vmlinuz-*-amd64; do
	[ -e "$k" ] || continue
	v=${k#/boot/vmlinuz-}
	if [ -d "/lib/modules/$v/kernel" ] && [ -d "/usr/src/linux-headers-$v" ]; then
		ok=$v
	fi
done
if [ -z "$ok" ]; then
	echo "install-deps: no kernel with matching modules+headers found; installing the headers of the newest image" >&2
	v=$(ls /boot/vmlinuz-*-amd64 | sed 's#/boot/vmlinuz-##' | sort -V | tail -n 1)
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "linux-headers-$v"
fi
echo "install-deps: ok"
