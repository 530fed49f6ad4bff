# packaging/install.mk: `make install`, `make deb` and `make test-package` (included by the
# Makefile). Paths follow Debian's: PREFIX=/usr is what the package installs, the default
# /usr/local is a hand install that Debian's own tools (pkg-config, python3, systemd, bash
# completion) still find. docs/install.md lists what goes where and why.
VERSION       := 0.1.0
BINDIR        ?= $(PREFIX)/bin
MANDIR        ?= $(PREFIX)/share/man
DATADIR       ?= $(PREFIX)/share/corral
DOCDIR        ?= $(PREFIX)/share/doc/corral
INCLUDEDIR    ?= $(PREFIX)/include
MULTIARCH     := $(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || $(CC) -print-multiarch 2>/dev/null)
LIBDIR        ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
PKGCONFIGDIR  ?= $(LIBDIR)/pkgconfig
COMPLETIONDIR ?= $(PREFIX)/share/bash-completion/completions
# Debian's python3 reads /usr/lib/python3/dist-packages (packaged modules, any 3.x) and
# /usr/local/lib/python3.X/dist-packages (local installs, its own 3.X only).
DEB_PYTHON3   := $(firstword $(wildcard /usr/bin/python3) python3)
PYTHONDIR     ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python3.$(shell $(DEB_PYTHON3) -c 'import sys; print(sys.version_info[1])' 2>/dev/null || echo 11)/dist-packages)
SYSTEMDUNITDIR ?= $(if $(filter /usr,$(PREFIX)),$(or $(shell pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null),/lib/systemd/system),$(PREFIX)/lib/systemd/system)

# The C SDK as a static library: an agent links it in and needs nothing of corral at run time
# (its sandbox has only what it names). cJSON stays a shared dependency (pkg-config Requires).
SDK_LIB := $(BUILD)/sdk-lib/libcorral-agent.a
SDK_CFLAGS := -std=gnu11 -O2 -g -fPIC -Wall -Wextra -Werror -D_GNU_SOURCE $(shell pkg-config --cflags libcjson)
$(BUILD)/sdk-lib/corral_agent.o: sdk/corral_agent.c sdk/corral_agent.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(SDK_CFLAGS) -c $< -o $@
$(SDK_LIB): $(BUILD)/sdk-lib/corral_agent.o
	rm -f $@ && ar rcs $@ $^
sdk-lib: $(SDK_LIB)

.PHONY: install sdk-lib deb test-package
install: all $(SDK_LIB)
	install -D -m 0755 $(CORRAL) $(DESTDIR)$(BINDIR)/corral
	install -D -m 0644 docs/corral.1 $(DESTDIR)$(MANDIR)/man1/corral.1
	install -D -m 0644 sdk/corral_agent.h $(DESTDIR)$(INCLUDEDIR)/corral_agent.h
	install -D -m 0644 $(SDK_LIB) $(DESTDIR)$(LIBDIR)/libcorral-agent.a
	install -d $(DESTDIR)$(PKGCONFIGDIR)
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' packaging/corral-agent.pc.in >$(DESTDIR)$(PKGCONFIGDIR)/corral-agent.pc
	install -D -m 0644 sdk/corral_agent.py $(DESTDIR)$(PYTHONDIR)/corral_agent.py
	install -D -m 0644 docs/policy.schema.json $(DESTDIR)$(DATADIR)/policy.schema.json
	install -D -m 0644 packaging/corral.bash-completion $(DESTDIR)$(COMPLETIONDIR)/corral
	install -d $(DESTDIR)$(DOCDIR)/examples/policies $(DESTDIR)$(DOCDIR)/examples/agents
	install -m 0644 examples/policies/*.json $(DESTDIR)$(DOCDIR)/examples/policies/
	install -m 0644 examples/agents/*.c examples/agents/*.py $(DESTDIR)$(DOCDIR)/examples/agents/
	install -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed 's|@BINDIR@|$(BINDIR)|g' packaging/corral-run@.service.in >$(DESTDIR)$(SYSTEMDUNITDIR)/corral-run@.service

# The Debian packages (corral, corral-agent-dev) from a copy of this tree, built by
# dpkg-buildpackage with debhelper and checked by lintian; the .debs land in build/deb/.
DEB_DIR := build/deb
deb:
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/corral-$(VERSION)
	tar -c --exclude=./build --exclude=./.git . | tar -x -C $(DEB_DIR)/corral-$(VERSION)
	cd $(DEB_DIR)/corral-$(VERSION) && dpkg-buildpackage -us -uc -b
	lintian --fail-on error $(DEB_DIR)/*.changes
	@ls $(DEB_DIR)/*.deb

# Builds the packages, installs them on this machine, uses them from the installed files alone,
# and purges them (tests/package/deb.sh); TAP, with the suite's "N passed, N failed" line.
test-package: deb
	@sh tests/package/run.sh
