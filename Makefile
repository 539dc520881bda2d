# SPDX-License-Identifier: GPL-2.0
# Out-of-tree build driver: the objects are listed in Kbuild.
#
#   make                  build vbblk.ko against KDIR
#   make W=1              with extra warnings (must stay clean)
#   make check-style      sparse (C=2) + W=1 + checkpatch.pl; fails on findings
#   make clean

# Default headers: the running kernel's, else the newest Debian amd64 ones
# (the guest kernel we test with is not the host's).
KVER ?= $(shell uname -r)
ifneq ($(wildcard /lib/modules/$(KVER)/build/Makefile),)
KDIR ?= /lib/modules/$(KVER)/build
else
KDIR ?= $(shell ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
endif

VBBLK_VERSION ?= $(shell git -C $(CURDIR) describe --always --dirty --tags 2>/dev/null || echo unknown)
export VBBLK_VERSION

all: modules

modules:
	@test -n "$(KDIR)" -a -d "$(KDIR)" || \
		{ echo "no kernel headers found: install linux-headers-amd64 or set KDIR=" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

check-style:
	scripts/check-style.sh

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean

kdir:
	@echo $(KDIR)

.PHONY: all modules check-style clean kdir
