# SPDX-License-Identifier: GPL-2.0
# vbblk, out of tree: the objects are listed in Kbuild. `make help` prints
# this comment (down to the first line that is not one).
#
# Targets:
#   make [modules]        build vbblk.ko against KDIR: KVER's headers (default:
#                         the running kernel's), never another kernel's; its
#                         first line says which and why
#   make W=1              with extra warnings (must stay clean)
#   make check-kdir       only that line, or which kernels have headers
#   make kdir             print KDIR (fails without headers)
#   make version          print the version (modinfo, DKMS)
#   make check-style      sparse (C=2) + W=1 + checkpatch.pl, the builds in a
#                         temporary copy of the source; fails on findings
#   make targets-docs     rewrite the targets table of docs/bench.md from
#                         bench/targets.py
#   make install          vbblk.ko into /lib/modules/<kernel>/updates, then
#                         depmod; the passthrough uapi header into
#                         INCLUDEDIR/linux/vbblk.h
#   make uninstall        remove both again, then depmod (no kernel headers
#                         needed: for KVER, default the running kernel)
#   make install-header   only the uapi header (no kernel headers needed)
#   make install-conf     modprobe.d options, udev rule, helpers (vbblk-bind,
#                         vbblk-compare) and fio jobs (docs/installing.md)
#   make uninstall-conf   remove those (an edited /etc/vbblk/disks is kept)
#   make dkms-src         the source as DKMS takes it, with its dkms.conf, in
#                         DESTDIR/usr/src/vbblk-<version>
#   make dkms-install     dkms-src, then register with DKMS, build and install
#                         for every kernel that has headers; rebuilt on kernel
#                         upgrades
#   make dkms-uninstall   remove every version of vbblk DKMS has (but the
#                         Debian package's) and its source copy
#   make examples         examples/vbblk-uring, a passthrough example program
#                         (host build; liburing-dev, examples/README.md)
#   make deb              vbblk-dkms_<version>_all.deb in DEBDIR (default: here;
#                         scripts/build-deb.sh, docs/debian-package.md)
#   make clean            (no kernel headers needed)
#   make help             this text
#
# Variables, make VAR=value (default):
#   KVER=RELEASE          the kernel to build and (un)install for (uname -r);
#                         its headers: /lib/modules/RELEASE/build
#   KDIR=DIR              the kernel build tree to build against (KVER's)
#   INSTALL_MOD_PATH=DIR  staging root of the modules, and of the header
#                         unless DESTDIR is given (none)
#   INSTALL_MOD_DIR=DIR   vbblk.ko's directory in /lib/modules/<kernel> (updates)
#   DESTDIR=DIR           staging root of the configuration and of dkms-src
#                         (none)
#   INCLUDEDIR=DIR        the uapi header's (/usr/local/include)
#   SBINDIR=DIR           vbblk-bind's and vbblk-compare's (/usr/local/sbin)
#   UDEVDIR=DIR           the udev rule's (/etc/udev/rules.d)
#   UDEVLIBDIR=DIR        the udev helper's (/usr/local/lib/udev)
#   DATADIR=DIR           the fio jobs' (/usr/local/share/vbblk)
#   DEPMOD=PATH           depmod (/sbin/depmod)
#   DKMS_KERNELS="R ..."  the kernels dkms-install builds for (every one with
#                         headers)
#   DEBDIR=DIR            where make deb puts the .deb (here)
#   VBBLK_VERSION=V       the version (the file VERSION, else git describe)
#   EXAMPLE_CFLAGS=FLAGS  make examples' (-O2 -Wall -Wextra -Werror)
#   VBBLK_SCSI=n, VBBLK_DEBUG=y   build options (docs/parameters.md)
#   KDIRS="DIR ..."       the kernels check-style builds against (KDIR)

# (for make help, before any include)
THIS_MAKEFILE := $(lastword $(MAKEFILE_LIST))

# The headers: KDIR= as given, else those of KVER (default: the running
# kernel), /lib/modules/KVER/build or /usr/src/linux-headers-KVER. Never
# another kernel's: without them, what builds fails and lists the kernels
# that have headers (check-kdir). tests/run and the bench pass KDIR.
KVER_FROM := $(origin KVER)
KVER ?= $(shell uname -r)
# the kernels with headers, i.e. what KVER= can name
HEADERS_KVERS = $(notdir $(patsubst %/build/,%,$(dir $(wildcard /lib/modules/*/build/Makefile))))
ifeq ($(origin KDIR),undefined)
KDIR := $(patsubst %/Makefile,%,$(firstword $(wildcard \
	/lib/modules/$(KVER)/build/Makefile /usr/src/linux-headers-$(KVER)/Makefile)))
KDIR_WHY = $(if $(filter undefined,$(KVER_FROM)),$(WHY_RUNNING),$(WHY_KVER))
WHY_RUNNING = the running kernel's headers (uname -r)
WHY_KVER = the headers of KVER=$(KVER) ($(KVER_FROM))
else
KDIR_WHY = KDIR= given ($(origin KDIR))
endif

# The release the headers belong to, i.e. the /lib/modules directory to use.
KREL = $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' \
	$(KDIR)/include/generated/utsrelease.h 2>/dev/null)

# A source tree exported for DKMS carries its version in a VERSION file.
VBBLK_VERSION ?= $(shell cat $(CURDIR)/VERSION 2>/dev/null || \
	git -C $(CURDIR) describe --always --dirty --tags 2>/dev/null || echo unknown)
export VBBLK_VERSION

INSTALL_MOD_DIR ?= updates
DEPMOD ?= /sbin/depmod
DESTDIR ?=
SBINDIR ?= /usr/local/sbin
UDEVDIR ?= /etc/udev/rules.d
UDEVLIBDIR ?= /usr/local/lib/udev
DATADIR ?= /usr/local/share/vbblk
INCLUDEDIR ?= /usr/local/include
# The header goes where the module is staged unless DESTDIR says otherwise.
HDR_ROOT = $(or $(DESTDIR),$(INSTALL_MOD_PATH))

all: modules

# Which headers a build uses and why, in one line; or why there are none.
ifeq ($(KDIR),)
NO_KDIR = { echo "vbblk: no headers for $(if $(filter undefined,$(KVER_FROM)),the running kernel \
$(KVER) (uname -r),KVER=$(KVER)):" \
		"no /lib/modules/$(KVER)/build, no /usr/src/linux-headers-$(KVER)"; \
	echo "vbblk: kernels with headers: $(or $(HEADERS_KVERS),none)"; \
	echo "vbblk: choose one with make KVER=<release>, or a kernel tree with make KDIR=<dir>;" \
		"or install linux-headers-$(KVER)"; } >&2; exit 1
check-kdir:
	@$(NO_KDIR)
kdir:
	@$(NO_KDIR)
else
check-kdir:
	@test -d "$(KDIR)" || { echo "vbblk: KDIR=$(KDIR) is no directory" >&2; exit 1; }
	@echo "vbblk: building against KDIR=$(KDIR): $(KDIR_WHY)"
kdir:
	@echo $(KDIR)
endif

# scripts/probe-kernel.sh: which APIs KDIR has (vbblk_features.h, cached
# per kernel); include/vbblk_compat.h keys on them.
modules: check-kdir
	@feat=$$($(CURDIR)/scripts/probe-kernel.sh $(KDIR)) && \
		$(MAKE) -C $(KDIR) M=$(CURDIR) VBBLK_FEATURES_DIR=$$feat modules

# Debian's headers ask for module signing but carry no key: sign only when
# the configured key is really there, instead of printing SSL errors.
SIGN_KEY = $(shell sed -n 's/^CONFIG_MODULE_SIG_KEY="\(.*\)"/\1/p' $(KDIR)/.config 2>/dev/null)
NO_SIGN = $(if $(wildcard $(KDIR)/$(SIGN_KEY) $(SIGN_KEY)),,CONFIG_MODULE_SIG_ALL=)

install: modules install-header
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=$(INSTALL_MOD_DIR) $(NO_SIGN) \
		modules_install
	$(DEPMOD) $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) -a $(KREL)

# A target of its own: the Debian package ships the header without building.
install-header:
	install -D -m 0644 include/uapi/linux/vbblk.h $(HDR_ROOT)$(INCLUDEDIR)/linux/vbblk.h

# No headers needed: a module outlives the headers it was built with. The
# release is the headers' when there are some, else KVER (default: uname -r).
UNINSTALL_REL = $(or $(KREL),$(KVER))
UNINSTALL_MODS = $(INSTALL_MOD_PATH)/lib/modules/$(UNINSTALL_REL)
UNINSTALL_DEPMOD = $(DEPMOD) $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) -a $(UNINSTALL_REL)
uninstall:
	rm -f $(UNINSTALL_MODS)/$(INSTALL_MOD_DIR)/vbblk.ko*
	rm -f $(HDR_ROOT)$(INCLUDEDIR)/linux/vbblk.h
	@if [ ! -d $(UNINSTALL_MODS) ]; then echo "vbblk: no $(UNINSTALL_MODS): depmod not run"; \
	elif ! command -v $(DEPMOD) >/dev/null; then echo "vbblk: no $(DEPMOD): depmod not run"; \
	else echo "$(UNINSTALL_DEPMOD)"; $(UNINSTALL_DEPMOD); fi

# The disk list is the administrator's: never overwritten, and kept on
# uninstall once edited (one that still is conf/disks goes).
install-conf:
	install -D -m 0644 conf/vbblk.conf $(DESTDIR)/etc/modprobe.d/vbblk.conf
	install -d $(DESTDIR)$(UDEVDIR) $(DESTDIR)$(UDEVLIBDIR) $(DESTDIR)$(SBINDIR)
	sed 's#@UDEVLIBDIR@#$(UDEVLIBDIR)#' conf/60-vbblk.rules > $(DESTDIR)$(UDEVDIR)/60-vbblk.rules
	install -m 0755 scripts/vbblk-bind.sh $(DESTDIR)$(SBINDIR)/vbblk-bind
	install -m 0755 scripts/vbblk-compare.sh $(DESTDIR)$(SBINDIR)/vbblk-compare
	install -d $(DESTDIR)$(DATADIR)/jobs
	install -m 0644 bench/jobs/*.fio $(DESTDIR)$(DATADIR)/jobs/
	sed 's#@SBINDIR@#$(SBINDIR)#' scripts/vbblk-udev.sh > $(DESTDIR)$(UDEVLIBDIR)/vbblk-udev
	chmod 0755 $(DESTDIR)$(UDEVLIBDIR)/vbblk-udev
	test -e $(DESTDIR)/etc/vbblk/disks || \
		install -D -m 0644 conf/disks $(DESTDIR)/etc/vbblk/disks

uninstall-conf:
	rm -f $(DESTDIR)/etc/modprobe.d/vbblk.conf $(DESTDIR)$(UDEVDIR)/60-vbblk.rules \
		$(DESTDIR)$(SBINDIR)/vbblk-bind $(DESTDIR)$(SBINDIR)/vbblk-compare \
		$(DESTDIR)$(UDEVLIBDIR)/vbblk-udev
	rm -rf $(DESTDIR)$(DATADIR)
	@d=$(DESTDIR)/etc/vbblk/disks; \
	if [ ! -e $$d ]; then :; \
	elif cmp -s $$d conf/disks; then echo "rm -f $$d"; rm -f $$d; \
	else echo "vbblk: kept $$d: edited (it is not conf/disks)"; fi
	@! [ -d $(DESTDIR)/etc/vbblk ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)/etc/vbblk

# DKMS wants the source in /usr/src/<name>-<version> with a dkms.conf that
# names the version; a VERSION file stands in for git there.
DKMS_SRC = $(DESTDIR)/usr/src/vbblk-$(VBBLK_VERSION)
DKMS_FILES = Makefile Kbuild $(wildcard vbblk*.h virtio_*.[ch] vbblk_*.c) include probe \
	scripts/probe-kernel.sh
DKMS_KERNELS ?= $(HEADERS_KVERS)

dkms-src:
	rm -rf $(DKMS_SRC)
	mkdir -p $(DKMS_SRC)
	cp -r --parents $(DKMS_FILES) $(DKMS_SRC)/
	echo $(VBBLK_VERSION) > $(DKMS_SRC)/VERSION
	sed 's/#MODULE_VERSION#/$(VBBLK_VERSION)/' dkms.conf.in > $(DKMS_SRC)/dkms.conf

dkms-install: dkms-src
	dkms add vbblk/$(VBBLK_VERSION)
	for k in $(DKMS_KERNELS); do dkms install vbblk/$(VBBLK_VERSION) -k $$k || exit 1; done

# Every version DKMS has of vbblk, not this tree's (a pull since
# dkms-install changes it), with its source copy; but not the Debian
# package's (dpkg owns its source): apt-get removes that one.
DKMS_VERSIONS = dkms status -m vbblk | sed -n -e 's|^vbblk/\([^,:]*\)[,:].*|\1|p' \
	-e 's|^vbblk, \([^,:]*\)[,:].*|\1|p' | sort -u
dkms-uninstall:
	@command -v dkms >/dev/null || { echo "vbblk: dkms is not installed" >&2; exit 1; }
	@vers=$$($(DKMS_VERSIONS)); \
	[ -n "$$vers" ] || echo "vbblk: DKMS has no vbblk"; \
	for v in $$vers; do \
		if dpkg-query -S /usr/src/vbblk-$$v >/dev/null 2>&1; then \
			echo "vbblk: vbblk/$$v is the vbblk-dkms package's: apt-get remove vbblk-dkms"; \
			continue; \
		fi; \
		echo "dkms remove vbblk/$$v --all"; dkms remove vbblk/$$v --all || exit 1; \
		echo "rm -rf $(DESTDIR)/usr/src/vbblk-$$v"; rm -rf $(DESTDIR)/usr/src/vbblk-$$v; \
	done
	rm -rf $(DKMS_SRC)

# With Debian's own tooling, from the tracked files (docs/debian-package.md).
DEBDIR ?= $(CURDIR)
deb:
	scripts/build-deb.sh $(DEBDIR)

# User-space examples: built for this host with its liburing, not for KDIR.
EXAMPLES = examples/vbblk-uring
EXAMPLE_CFLAGS ?= -O2 -Wall -Wextra -Werror

examples: $(EXAMPLES)

examples/%: examples/%.c include/uapi/linux/vbblk.h
	$(CC) $(EXAMPLE_CFLAGS) -Iinclude/uapi -o $@ $< -luring

# Without headers (none installed, or removed since the build) there is no
# kbuild to clean: what the module build leaves goes by hand.
KBUILD_PRODUCTS = *.o *.ko *.ko.* *.mod *.mod.c .*.cmd .*.d *.o.d *.symtypes \
	Module.symvers modules.order modules.nsdeps .tmp_*
clean:
ifneq ($(wildcard $(KDIR)/Makefile),)
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean
else
	@echo "vbblk: no kernel headers: removing the module build's products by hand"
	rm -rf $(KBUILD_PRODUCTS)
endif
	rm -f $(EXAMPLES)

version:
	@echo $(VBBLK_VERSION)

.PHONY: all check-kdir modules install install-header uninstall install-conf \
	uninstall-conf dkms-src dkms-install dkms-uninstall deb examples check-style \
	targets-docs clean kdir version help

check-style:
	scripts/check-style.sh

# The comment at the top, so the list cannot drift from the Makefile's.
help:
	@awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' $(THIS_MAKEFILE)

targets-docs:
	bench/targets.py --write docs/bench.md
