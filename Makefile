# Shoal build.
#   make              build the daemons into build/bin (release, -O2)
#   make SANITIZE=1   build with AddressSanitizer + UBSan into build-san/
#   make run          install deps, build, start a local cluster
#   make test         install deps, build, run unit + integration tests,
#                     then the same under the sanitizers, then the fuzzers
#   make bench        the benchmark suite (test/bench/), about 15 minutes

SANITIZE ?= 0
ifeq ($(SANITIZE),1)
  BUILD ?= build-san
  SANFLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
  OPT = -O1 -g
else
  BUILD ?= build
  SANFLAGS =
  OPT = -O2 -g
endif

CC ?= cc
VERSION = 0.9.0
# the commit built from, "-dirty" with uncommitted changes; kept in a stamp
# that changes only when it does, so only version.o is rebuilt
GIT_REV := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)$(shell \
             git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
LLHTTP_SRC = /usr/share/llhttp
LLHTTP_INC = /usr/share/include/llhttp
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
CFLAGS = -std=gnu11 $(OPT) $(WARN) $(SANFLAGS) -D_GNU_SOURCE -pthread \
         -I$(LLHTTP_INC) -Icommon -Icommon/s3 -MMD -MP
LDFLAGS = $(SANFLAGS) -pthread
LIBS = -levent_core -levent_extra -levent_pthreads -levent_openssl -ljansson -lxxhash -lcurl -lssl \
       -lcrypto -lrocksdb -lexpat -lisal -larchive

COMMON_SRC = $(wildcard common/*.c common/s3/*.c)
# the target's subsystems, bottom layer first (test/lint/layers.sh)
TARGET_LAYERS = store core space backend cluster redundancy xform jobs api
TARGET_SRC = $(wildcard target/*.c $(TARGET_LAYERS:%=target/%/*.c))
TARGET_INC = $(TARGET_LAYERS:%=-Itarget/%)
# the proxy's folders: the API's handlers at the top, the S3 front end,
# the cluster's membership and consensus
PROXY_DIRS = proxy proxy/s3 proxy/cluster
PROXY_SRC  = $(wildcard $(PROXY_DIRS:%=%/*.c))
PROXY_INC  = $(PROXY_DIRS:%=-I%)
LOADER_SRC = $(wildcard loader/*.c)
CLI_SRC    = $(wildcard loader/shoal/*.c)
EC_SRC     = $(wildcard ec/*.c)
FAULTFS_SRC = $(wildcard test/faultfs/*.c)
LLHTTP_OBJ = $(BUILD)/llhttp/llhttp.o $(BUILD)/llhttp/api.o $(BUILD)/llhttp/http.o

COMMON_OBJ = $(COMMON_SRC:%.c=$(BUILD)/%.o) $(LLHTTP_OBJ)
TARGET_OBJ = $(TARGET_SRC:%.c=$(BUILD)/%.o)
PROXY_OBJ  = $(PROXY_SRC:%.c=$(BUILD)/%.o)
LOADER_OBJ = $(LOADER_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ    = $(CLI_SRC:%.c=$(BUILD)/%.o)
EC_OBJ     = $(EC_SRC:%.c=$(BUILD)/%.o)
FAULTFS_OBJ = $(FAULTFS_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC = $(wildcard test/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:test/unit/%.c=$(BUILD)/test/%)
# unit tests link every module of the target but its main
TARGET_LIB_OBJ = $(filter-out $(BUILD)/target/main.o,$(TARGET_OBJ))
PROXY_LIB_OBJ = $(filter-out $(BUILD)/proxy/main.o,$(PROXY_OBJ))

DEPS_STAMP = .deps-ok

.PHONY: all deps run stop install test test-unit test-integration fuzz bench clean FORCE

all: $(DEPS_STAMP) $(BUILD)/bin/shoal-proxy $(BUILD)/bin/shoal-target $(BUILD)/bin/shoal-loader \
     $(BUILD)/bin/shoal $(BUILD)/bin/shoal-transform-identity

# Installs what is missing; re-checked when the script changes.
$(DEPS_STAMP): deploy/install-deps.sh
	@./deploy/install-deps.sh
	@touch $@

deps:
	@./deploy/install-deps.sh

# llhttp's sources arrive with the dependencies: these rules name them in
# the recipe, not as prerequisites, so that a parallel make on a new
# machine does not judge them missing before install-deps.sh has run.
$(LLHTTP_OBJ): $(BUILD)/llhttp/%.o: | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) $(SANFLAGS) -I$(LLHTTP_INC) -c $(LLHTTP_SRC)/$*.c -o $@

$(BUILD)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(TARGET_OBJ): CFLAGS += $(TARGET_INC) -Iec
$(PROXY_OBJ): CFLAGS += $(PROXY_INC)

$(BUILD)/version.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(VERSION) $(GIT_REV)' | cmp -s - $@ || echo '$(VERSION) $(GIT_REV)' > $@

$(BUILD)/common/version.o: $(BUILD)/version.stamp
$(BUILD)/common/version.o: CFLAGS += -DSHOAL_VERSION='"$(VERSION)"' -DSHOAL_GIT_REV='"$(GIT_REV)"'

$(BUILD)/bin/shoal-target: $(TARGET_OBJ) $(COMMON_OBJ) $(EC_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/bin/shoal-loader: $(LOADER_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) -lm

$(BUILD)/bin/shoal: $(CLI_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) -lm

$(BUILD)/bin/shoal-proxy: $(PROXY_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS) -lraft -luv

# the example transform in C (deploy/transforms/identity.c)
$(BUILD)/bin/shoal-transform-identity: $(BUILD)/deploy/transforms/identity.o $(LLHTTP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^

# faultfs (test/faultfs/): the FUSE file system the power-cut tests run
# targets on; a test tool, built with the tests and never installed
$(FAULTFS_OBJ): CFLAGS += $(shell pkg-config --cflags fuse3 2>/dev/null)

$(BUILD)/bin/faultfs: $(FAULTFS_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ -lfuse3

$(BUILD)/test/%: test/unit/%.c $(COMMON_OBJ) $(TARGET_LIB_OBJ) $(EC_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(TARGET_INC) -Iec -o $@ $(filter %.c %.o,$^) $(LIBS)

# a unit test of the proxy's module X is test/unit/test_proxy_X.c: it
# links every module of the proxy but its main
$(BUILD)/test/test_proxy_%: test/unit/test_proxy_%.c $(PROXY_LIB_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PROXY_INC) -o $@ $(filter %.c %.o,$^) $(LIBS) -lraft -luv

$(BUILD)/bench/ec_bench: test/bench/ec_bench.c $(EC_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iec -o $@ $(filter %.c %.o,$^) -lisal

run: all
	./deploy/local/cluster.sh start

# make install [PREFIX=/usr/local] [DESTDIR=...] [SYSCONFDIR=/etc]: the
# binaries, the systemd units (their paths rewritten to PREFIX and
# SYSCONFDIR), the shoal user (sysusers.d), the example configs (never over
# existing ones) and the README.
PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
UNIT_PATHS = s|/usr/local/bin/|$(PREFIX)/bin/|g; s|/usr/local/share/|$(PREFIX)/share/|g; \
             s|/etc/shoal/|$(SYSCONFDIR)/shoal/|g
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) $(DESTDIR)$(PREFIX)/lib/sysusers.d \
	    $(DESTDIR)$(PREFIX)/share/doc/shoal
	install -d -m 0750 $(DESTDIR)$(SYSCONFDIR)/shoal
	install -m 0755 $(BUILD)/bin/shoal-proxy $(BUILD)/bin/shoal-target $(BUILD)/bin/shoal-loader \
	    $(BUILD)/bin/shoal $(BUILD)/bin/shoal-transform-identity $(DESTDIR)$(PREFIX)/bin/
	for u in shoal-proxy.service shoal-target@.service; do \
	  sed '$(UNIT_PATHS)' deploy/systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u && \
	  chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done
	install -m 0644 deploy/systemd/shoal.sysusers $(DESTDIR)$(PREFIX)/lib/sysusers.d/shoal.conf
	for c in proxy target; do \
	  [ -e $(DESTDIR)$(SYSCONFDIR)/shoal/$$c.json ] || \
	    install -m 0640 deploy/config/$$c.json $(DESTDIR)$(SYSCONFDIR)/shoal/$$c.json || exit 1; \
	done
	install -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/shoal/README.md
	install -d $(DESTDIR)$(PREFIX)/share/shoal/transforms
	install -m 0755 deploy/transforms/*.py $(DESTDIR)$(PREFIX)/share/shoal/transforms/
	install -m 0644 deploy/transforms/*.c $(DESTDIR)$(PREFIX)/share/shoal/transforms/

stop:
	./deploy/local/cluster.sh stop

# T= runs some tests only: make test-unit T=test_vmap,
# make test-integration T=test_ec.py (or T='test_ec.py::test_x').
test-unit: all $(UNIT_BIN)
	@./test/run-unit.sh $(BUILD) $(T)

test-integration: all $(BUILD)/bin/faultfs
	@SHOAL_BUILD=$(BUILD) ./test/run-integration.sh $(T)

# Fuzz targets (libFuzzer + ASan/UBSan), each run for FUZZ_SECONDS from its
# seed corpus with its dictionary (test/fuzz/); a crash fails the run and
# leaves the input in build-fuzz/. FUZZ_<t>_SRC lists what target t links
# besides test/fuzz/fuzz_<t>.c; objects are built once into build-fuzz/.
FUZZ_SECONDS ?= 18
FUZZ_TARGETS = s3list s3xml awschunk http hdrparse objname s3auth tmpl listpage url objmeta query archidx batchreq nativelist s3cors s3acl s3own
FUZZ_HTTP_SRC = common/http.c common/httplisten.c common/httpresp.c common/httptake.c common/httpstop.c common/headblock.c common/log.c common/loopq.c common/util.c \
                $(LLHTTP_SRC)/llhttp.c $(LLHTTP_SRC)/api.c $(LLHTTP_SRC)/http.c
FUZZ_s3list_SRC = common/s3/s3list.c common/util.c
FUZZ_s3xml_SRC = common/s3/s3xml.c common/util.c
FUZZ_nativelist_SRC = common/nativelist.c common/s3/s3list.c common/util.c
FUZZ_awschunk_SRC = common/s3/awschunk.c common/util.c
FUZZ_http_SRC = $(FUZZ_HTTP_SRC)
FUZZ_hdrparse_SRC = common/hdrparse.c common/util.c
FUZZ_BMD_SRC = common/bmd.c common/bprof.c common/xform.c common/snap.c common/s3/s3cors.c \
               common/s3/s3acl.c common/s3/s3user.c common/s3/s3own.c common/s3/s3xml.c \
               common/s3/s3.c common/err.c
FUZZ_objname_SRC = common/objname.c $(FUZZ_BMD_SRC) $(FUZZ_HTTP_SRC)
FUZZ_s3auth_SRC = common/s3/s3auth.c common/s3/s3.c common/s3/sigv4.c common/s3/awschunk.c \
                  common/err.c $(FUZZ_HTTP_SRC)
FUZZ_tmpl_SRC = common/tmpl.c common/util.c
FUZZ_listpage_SRC = common/listpage.c common/util.c
FUZZ_url_SRC = common/url.c common/util.c
FUZZ_objmeta_SRC = target/store/objmeta.c
FUZZ_archidx_SRC = common/archidx.c common/util.c
FUZZ_batchreq_SRC = common/batchreq.c common/archidx.c $(FUZZ_BMD_SRC) $(FUZZ_HTTP_SRC)
FUZZ_s3cors_SRC = $(FUZZ_BMD_SRC) $(FUZZ_HTTP_SRC)
FUZZ_s3acl_SRC = $(FUZZ_BMD_SRC) $(FUZZ_HTTP_SRC)
FUZZ_s3own_SRC = $(FUZZ_BMD_SRC) $(FUZZ_HTTP_SRC)
FUZZ_query_SRC = common/s3/s3sub.c common/s3/s3.c common/s3/s3xml.c common/err.c $(FUZZ_HTTP_SRC)
FUZZ_CFLAGS = -g -O1 -fsanitize=fuzzer-no-link,address,undefined -D_GNU_SOURCE \
              -I$(LLHTTP_INC) -Icommon -Icommon/s3 $(TARGET_INC) -MMD -MP
FUZZ_LIBS = -lexpat -levent_core -levent_pthreads -levent_openssl -ljansson -lssl -lcrypto -larchive
fuzz_obj = $(patsubst %.c,build-fuzz/obj/%.o,$(subst $(LLHTTP_SRC)/,llhttp/,$(1)))

FUZZ_LLHTTP_OBJ = build-fuzz/obj/llhttp/llhttp.o build-fuzz/obj/llhttp/api.o \
                  build-fuzz/obj/llhttp/http.o
$(FUZZ_LLHTTP_OBJ): build-fuzz/obj/llhttp/%.o: | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -c $(LLHTTP_SRC)/$*.c -o $@

build-fuzz/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -c $< -o $@

define fuzz_link
build-fuzz/fuzz_$(1): $(call fuzz_obj,test/fuzz/fuzz_$(1).c $(FUZZ_$(1)_SRC))
	clang -fsanitize=fuzzer,address,undefined -o $$@ $$^ $(FUZZ_LIBS)
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_link,$(t))))

fuzz: $(FUZZ_TARGETS:%=build-fuzz/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus-$$t && cp test/fuzz/corpus/$$t/* build-fuzz/corpus-$$t/ && \
	  (cd build-fuzz && ./fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -dict=../test/fuzz/$$t.dict \
	      -print_final_stats=1 corpus-$$t 2>fuzz_$$t.log) || \
	    { tail -40 build-fuzz/fuzz_$$t.log; echo "fuzz: $$t failed"; exit 1; }; \
	  echo "fuzz: $$t ran $(FUZZ_SECONDS) s: $$(grep -o 'stat::number_of_executed_units: [0-9]*' build-fuzz/fuzz_$$t.log || tail -1 build-fuzz/fuzz_$$t.log | cut -c1-80)"; \
	done

-include $(shell find build-fuzz -name '*.d' 2>/dev/null)

# The whole suite: the size lint (no file over 1,000 lines, no function over
# 100), the release build, then the sanitizer build, then the fuzzers.
test: $(DEPS_STAMP)
	./test/lint/sizes.sh
	./test/lint/layers.sh
	./test/lint/test_layers.sh
	$(MAKE) T= test-unit test-integration
	$(MAKE) T= SANITIZE=1 test-unit test-integration
	$(MAKE) fuzz

bench: all $(BUILD)/bench/ec_bench
	./test/bench/run-all.sh

clean:
	rm -rf build build-san build-fuzz $(DEPS_STAMP)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
