# Shoal build.
#   make              build the daemons into build/bin (release, -O2)
#   make SANITIZE=1   build with AddressSanitizer + UBSan into build-san/
#   make run          install deps, build, start a local cluster
#   make test         install deps, build, run unit + integration tests,
#                     then the same under the sanitizers

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
LLHTTP_SRC = /usr/share/llhttp
LLHTTP_INC = /usr/share/include/llhttp
WARN = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
CFLAGS = -std=gnu11 $(OPT) $(WARN) $(SANFLAGS) -D_GNU_SOURCE -pthread \
         -I$(LLHTTP_INC) -Icommon -MMD -MP
LDFLAGS = $(SANFLAGS) -pthread
LIBS = -levent_core -levent_pthreads -ljansson -lxxhash -lcurl -lcrypto -lrocksdb

COMMON_SRC = $(wildcard common/*.c)
TARGET_SRC = $(wildcard target/*.c)
PROXY_SRC  = $(wildcard proxy/*.c)
LLHTTP_OBJ = $(BUILD)/llhttp/llhttp.o $(BUILD)/llhttp/api.o $(BUILD)/llhttp/http.o

COMMON_OBJ = $(COMMON_SRC:%.c=$(BUILD)/%.o) $(LLHTTP_OBJ)
TARGET_OBJ = $(TARGET_SRC:%.c=$(BUILD)/%.o)
PROXY_OBJ  = $(PROXY_SRC:%.c=$(BUILD)/%.o)

UNIT_SRC = $(wildcard test/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:test/unit/%.c=$(BUILD)/test/%)
# unit tests may link the target's pure modules too
TARGET_LIB_OBJ = $(BUILD)/target/ometa.o $(BUILD)/target/store.o

DEPS_STAMP = .deps-ok

.PHONY: all deps run stop test test-unit test-integration clean

all: $(DEPS_STAMP) $(BUILD)/bin/shoal-proxy $(BUILD)/bin/shoal-target

# Installs what is missing; re-checked when the script changes.
$(DEPS_STAMP): deploy/install-deps.sh
	@./deploy/install-deps.sh
	@touch $@

deps:
	@./deploy/install-deps.sh

$(BUILD)/llhttp/%.o: $(LLHTTP_SRC)/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(OPT) $(SANFLAGS) -I$(LLHTTP_INC) -c $< -o $@

$(BUILD)/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/bin/shoal-target: $(TARGET_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/bin/shoal-proxy: $(PROXY_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/test/%: test/unit/%.c $(COMMON_OBJ) $(TARGET_LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itarget -o $@ $(filter %.c %.o,$^) $(LIBS)

run: all
	./deploy/local/cluster.sh start

stop:
	./deploy/local/cluster.sh stop

test-unit: all $(UNIT_BIN)
	@./test/run-unit.sh $(BUILD)

test-integration: all
	@SHOAL_BUILD=$(BUILD) ./test/run-integration.sh

# The whole suite: release build, then the sanitizer build.
test: $(DEPS_STAMP)
	$(MAKE) test-unit test-integration
	$(MAKE) SANITIZE=1 test-unit test-integration

clean:
	rm -rf build build-san $(DEPS_STAMP)

-include $(shell find build build-san -name '*.d' 2>/dev/null)
