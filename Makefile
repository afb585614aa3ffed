# posixtrace -- see README.md.  `make`, `make test`, `make demo`, `make bench`,
# `make install PREFIX=DIR`.  `make SANITIZE=1` builds into build-asan/ with
# ASan+UBSan.
VERSION      := 0.1.0
SOVERSION    := 1
PREFIX       ?= /usr/local
SANITIZE     ?=
BUILD        ?= $(if $(SANITIZE),build-asan,build)

CXX          ?= g++
CLANG        ?= clang
BPFTOOL      ?= bpftool
ARCH         := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

WARNINGS     := -Wall -Wextra -Wno-missing-field-initializers
comma        := ,
SAN_FLAGS    := $(if $(SANITIZE),-fsanitize=address$(comma)undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -Wno-maybe-uninitialized)
CXXFLAGS     ?= -O2 -g
CXXFLAGS     += -std=c++20 $(WARNINGS) $(SAN_FLAGS) -fPIC -pthread \
                -Iinclude -Iuserspace/lib -Ibpf -I$(BUILD)/gen \
                -DPOSIXTRACE_VERSION='"$(VERSION)"'
CFLAGS_C     := -O2 -g -std=gnu11 $(WARNINGS) $(SAN_FLAGS) -Iinclude -pthread
LDLIBS_LIB   := -lbpf -lelf -ldeflate -lz -pthread
LDFLAGS      += $(SAN_FLAGS)

LIB_SRCS     := $(shell find userspace/lib -name '*.cpp' | sort)
LIB_OBJS     := $(LIB_SRCS:%.cpp=$(BUILD)/obj/%.o)
CLI_SRCS     := $(shell find userspace/cli -name '*.cpp' | sort)
CLI_OBJS     := $(CLI_SRCS:%.cpp=$(BUILD)/obj/%.o)
TEST_SRCS    := $(shell find tests -maxdepth 1 -name '*.cpp' | sort)
TEST_OBJS    := $(TEST_SRCS:%.cpp=$(BUILD)/obj/%.o)
BENCH_SRCS   := $(wildcard bench/*.cpp)
BENCH_BINS   := $(BENCH_SRCS:bench/%.cpp=$(BUILD)/bench/%) $(BUILD)/bench/pingpong
HELPER_SRCS  := $(wildcard tests/helpers/*.c)
HELPER_BINS  := $(HELPER_SRCS:tests/helpers/%.c=$(BUILD)/tests/helpers/%) \
                $(BUILD)/tests/helpers/thrower $(BUILD)/tests/helpers/libownlib.so \
                $(BUILD)/tests/helpers/libabuselib.so $(BUILD)/tests/helpers/libplainlib.so \
                $(BUILD)/tests/helpers/libpreload_marker.so $(BUILD)/tests/helpers/libpreload_flood.so \
                $(BUILD)/tests/helpers/libmanynoteslib.so $(BUILD)/tests/helpers/libgatedlib.so \
                $(BUILD)/tests/helpers/interpreter_env $(BUILD)/tests/helpers/interpreter_yes \
                $(BUILD)/tests/helpers/other_build_events_pinned \
                $(BUILD)/tests/helpers/other_build_events_unoptimised
EXAMPLE_SRCS := $(wildcard examples/*.c)
EXAMPLE_BINS := $(EXAMPLE_SRCS:examples/%.c=$(BUILD)/examples/%)

SKEL         := $(BUILD)/gen/posixtrace.skel.h
BPF_OBJ      := $(BUILD)/gen/posixtrace.bpf.o
VMLINUX      := $(BUILD)/gen/vmlinux.h
SHLIB        := $(BUILD)/lib/libposixtrace.so.$(SOVERSION)
STLIB        := $(BUILD)/lib/libposixtrace.a
CLI          := $(BUILD)/bin/posixtrace
TESTS        := $(BUILD)/tests/posixtrace-tests
STRESS       := $(BUILD)/tests/stress/posixtrace-stress
STRESS_SRCS  := $(wildcard tests/stress/*.cpp)
STRESS_OBJS  := $(STRESS_SRCS:%.cpp=$(BUILD)/obj/%.o)
STRESS_SECONDS ?= 300
RPATH        := -Wl,-rpath,'$$ORIGIN/../lib'

.PHONY: all test demo bench install clean deps format stress report-example deb
all: $(SHLIB) $(STLIB) $(CLI) $(TESTS) $(STRESS) $(EXAMPLE_BINS) $(BENCH_BINS)

deps:
	@scripts/install-deps.sh

$(VMLINUX):
	@mkdir -p $(@D)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BPF_OBJ): bpf/posixtrace.bpf.c $(wildcard bpf/*.bpf.h) bpf/posixtrace.h $(VMLINUX)
	$(CLANG) -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_$(ARCH) -Wall -I$(BUILD)/gen -Ibpf -I/usr/include/$(shell uname -m)-linux-gnu -c $< -o $@

$(SKEL): $(BPF_OBJ)
	$(BPFTOOL) gen skeleton $< name posixtrace_bpf > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.o: %.cpp $(SKEL)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@

# The library exports only the C ABI (functions marked visible).
$(BUILD)/obj/userspace/lib/%.o: CXXFLAGS += -fvisibility=hidden
# Tests that check files of the tree (the manual pages) find it here.
$(BUILD)/obj/tests/%.o: CXXFLAGS += -DPOSIXTRACE_SOURCE_DIR=\"$(CURDIR)\"
# The suites are scaffolding around the library, which stays at -O2: built
# unoptimized they compile two to five times faster (five under ASan),
# which keeps CI's two builds within its time.
$(TEST_OBJS): CXXFLAGS += -O0

$(SHLIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	$(CXX) -shared -Wl,-soname,libposixtrace.so.$(SOVERSION) $(LDFLAGS) -o $@ $^ $(LDLIBS_LIB)
	ln -sf libposixtrace.so.$(SOVERSION) $(BUILD)/lib/libposixtrace.so

$(STLIB): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

# The CLI uses the library's C++ classes, so it links the static archive;
# push talks HTTP(S) through libcurl.
$(CLI): $(CLI_OBJS) $(STLIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $(CLI_OBJS) $(STLIB) $(LDLIBS_LIB) -lcurl

# The ClickHouse schema is installed as it is and built into push.
$(BUILD)/gen/clickhouse_schema.inc: share/clickhouse.sql
	@mkdir -p $(@D)
	{ printf 'R"schema('; cat $<; printf ')schema"\n'; } > $@
$(BUILD)/obj/userspace/cli/push/clickhouse_schema.o: $(BUILD)/gen/clickhouse_schema.inc

# The tests link the CLI's export writers and the report's page to test
# them on synthetic events (and push's Native blocks, checked byte by byte),
TEST_CLI_OBJS := $(filter-out %/export_command.o,$(filter $(BUILD)/obj/userspace/cli/export/% \
                 $(BUILD)/obj/userspace/cli/event_format.o $(BUILD)/obj/userspace/cli/safe_text.o \
                 $(BUILD)/obj/userspace/cli/push/native_block.o \
                 $(BUILD)/obj/userspace/cli/report/timeline.o \
                 $(BUILD)/obj/userspace/cli/report/report_page.o \
                 $(BUILD)/obj/userspace/cli/report/report_assets.o \
                 $(BUILD)/obj/userspace/cli/threads/thread_table.o \
                 $(BUILD)/obj/userspace/cli/threads/thread_screen.o,$(CLI_OBJS)))
# And the library's way of opening a traced process's files, its merge of
# rings, its own rings, its placing of kernel losses and the stream's store
# (hidden in it).
TEST_LIB_OBJS := $(BUILD)/obj/userspace/lib/util/process_files.o \
                 $(BUILD)/obj/userspace/lib/util/elf_dynamic.o \
                 $(BUILD)/obj/userspace/lib/usdt/library_search.o \
                 $(BUILD)/obj/userspace/lib/usdt/pending_libraries.o \
                 $(BUILD)/obj/userspace/lib/usdt/usdt_notes.o \
                 $(BUILD)/obj/userspace/lib/util/elf_symbols.o \
                 $(BUILD)/obj/userspace/lib/util/text_file.o \
                 $(BUILD)/obj/userspace/lib/stream/ring_merger.o \
                 $(BUILD)/obj/userspace/lib/sources/lanes/local_ring.o \
                 $(BUILD)/obj/userspace/lib/sources/lanes/chunk_pool.o \
                 $(BUILD)/obj/userspace/lib/sources/kernel/loss_notices.o \
                 $(BUILD)/obj/userspace/lib/sources/kernel/loop_ring_mirror.o \
                 $(BUILD)/obj/userspace/lib/store/stream_store.o \
                 $(BUILD)/obj/userspace/lib/store/event_buffer.o \
                 $(BUILD)/obj/userspace/lib/store/lent_chunks.o \
                 $(BUILD)/obj/userspace/lib/store/loss_ledger.o \
                 $(BUILD)/obj/userspace/lib/store/loss_placement.o \
                 $(BUILD)/obj/userspace/lib/store/loss_reports.o \
                 $(BUILD)/obj/userspace/lib/stream/system_event_queue.o \
                 $(BUILD)/obj/userspace/lib/stream/stream_intake.o \
                 $(BUILD)/obj/userspace/lib/stream/store_reader.o \
                 $(BUILD)/obj/userspace/lib/log/block_encoder.o \
                 $(BUILD)/obj/userspace/lib/log/log_writer.o \
                 $(BUILD)/obj/userspace/lib/log/log_writer_thread.o \
                 $(BUILD)/obj/userspace/lib/stream/lane_runs.o \
                 $(BUILD)/obj/userspace/lib/events/event_destination.o \
                 $(BUILD)/obj/userspace/lib/stages/hidden_wakeups.o \
                 $(BUILD)/obj/userspace/lib/stages/record_pipeline.o \
                 $(BUILD)/obj/userspace/lib/stages/process_follower.o \
                 $(BUILD)/obj/userspace/lib/stages/library_thread_filter.o \
                 $(BUILD)/obj/userspace/lib/util/library_threads.o \
                 $(BUILD)/obj/userspace/lib/threads/td_notify.o \
                 $(BUILD)/obj/userspace/lib/events/stream_user_events.o \
                 $(BUILD)/obj/userspace/lib/events/event_names.o \
                 $(BUILD)/obj/userspace/lib/events/remote_user_events.o \
                 $(BUILD)/obj/userspace/lib/attributes/attributes.o \
                 $(BUILD)/obj/userspace/lib/attributes/trace_origin.o
$(TESTS): $(TEST_OBJS) $(TEST_CLI_OBJS) $(TEST_LIB_OBJS) $(SHLIB) $(EXAMPLE_BINS) $(HELPER_BINS) $(STRESS)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $(TEST_OBJS) $(TEST_CLI_OBJS) $(TEST_LIB_OBJS) -L$(BUILD)/lib -lposixtrace $(RPATH) -lbpf -lelf -ldeflate -lz -pthread

# The stress harness (tests/stress/): `make test` runs it briefly, `make
# stress` for STRESS_SECONDS.
$(STRESS): $(STRESS_OBJS) $(SHLIB)
	@mkdir -p $(@D)
	$(CXX) $(LDFLAGS) -o $@ $(STRESS_OBJS) -L$(BUILD)/lib -lposixtrace -Wl,-rpath,'$$ORIGIN/../../lib' -pthread

$(BUILD)/examples/%: examples/%.c $(SHLIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_C) -o $@ $< -L$(BUILD)/lib -lposixtrace $(RPATH) $(LDFLAGS)

# Programs the tests trace (linked with the library, unaware of the tracer).
$(BUILD)/tests/helpers/%: tests/helpers/%.c tests/helpers/helpers.h $(SHLIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_C) -o $@ $< -L$(BUILD)/lib -lposixtrace -Wl,-rpath,'$$ORIGIN/../../lib' $(LDFLAGS)

# Not linked with libposixtrace: an unmodified C++ program.
$(BUILD)/tests/helpers/thrower: tests/helpers/thrower.cpp
	@mkdir -p $(@D)
	$(CXX) -O2 -g -o $@ $<

# Probe sites of posix_trace:event with arguments where another build of
# libposixtrace would put them.
$(BUILD)/tests/helpers/other_build_events_pinned: tests/helpers/hostile/other_build_events.c $(SHLIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_C) -DPINNED_REGISTERS -o $@ $< -L$(BUILD)/lib -lposixtrace -Wl,-rpath,'$$ORIGIN/../../lib' $(LDFLAGS)
$(BUILD)/tests/helpers/other_build_events_unoptimised: tests/helpers/hostile/other_build_events.c $(SHLIB)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_C) -O0 -o $@ $< -L$(BUILD)/lib -lposixtrace -Wl,-rpath,'$$ORIGIN/../../lib' $(LDFLAGS)

# Hostile: their PT_INTERP names an ordinary program instead of ld.so.
$(BUILD)/tests/helpers/interpreter_%: tests/helpers/hostile/any_interpreter.c
	@mkdir -p $(@D)
	$(CC) -O2 -o $@ $< -Wl,--dynamic-linker=/usr/bin/$*

$(BUILD)/tests/helpers/libpreload_flood.so: tests/helpers/lib/preload_marker.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_C) -DFLOOD -shared -fPIC -o $@ $<

$(BUILD)/tests/helpers/lib%.so: tests/helpers/lib/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_C) -shared -fPIC -o $@ $<

$(BUILD)/bench/pingpong: bench/pingpong.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -pthread -o $@ $<

# The LTTng-UST peer of the user-event benchmark (make bench only).
$(BUILD)/bench/bench_lttng: bench/lttng/bench_lttng.c bench/lttng/bench_tp.c bench/lttng/bench_tp.h
	@mkdir -p $(@D)
	$(CC) -O2 -g -Ibench/lttng -o $@ bench/lttng/bench_lttng.c bench/lttng/bench_tp.c -llttng-ust -ldl -pthread

# The plain libbpf reference of the uprobe path (make bench only).
$(BUILD)/gen/usdt_copy.bpf.o: bench/reference/usdt_copy.bpf.c $(VMLINUX)
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -I$(BUILD)/gen -I/usr/include/$(shell uname -m)-linux-gnu -c $< -o $@
$(BUILD)/gen/usdt_copy.skel.h: $(BUILD)/gen/usdt_copy.bpf.o
	$(BPFTOOL) gen skeleton $< name usdt_copy_bpf > $@.tmp && mv $@.tmp $@
$(BUILD)/bench/usdt_reference: bench/reference/usdt_reference.cpp $(BUILD)/gen/usdt_copy.skel.h
	@mkdir -p $(@D)
	$(CXX) -O2 -g -std=c++20 $(WARNINGS) -I$(BUILD)/gen -o $@ $< -lbpf -lelf -lz -pthread

# The floor of the log's side: no posixtrace code, the log's checksum.
$(BUILD)/bench/bench_log_floor: bench/bench_log_floor.cpp
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $< $(LDFLAGS) -ldeflate -pthread

$(BUILD)/bench/%: bench/%.cpp bench/bench_support.hpp $(SHLIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $< -L$(BUILD)/lib -lposixtrace $(RPATH) $(LDFLAGS)

test:
	@scripts/install-deps.sh
	@scripts/mount-tracefs.sh
	@$(MAKE) --no-print-directory all
	@scripts/run-tests.sh $(TESTS)

# Builds only what it runs (the library and the demo), on every CPU.
demo:
	@scripts/install-deps.sh
	@scripts/mount-tracefs.sh
	@$(MAKE) --no-print-directory -j$$(nproc) $(BUILD)/examples/demo
	$(BUILD)/examples/demo

# docs/report-example.png: the report of a program with 20 named threads,
# rendered by headless chromium.
report-example:
	@scripts/install-deps.sh
	@scripts/mount-tracefs.sh
	@$(MAKE) --no-print-directory all
	$(CLI) record --events user,td,system -o $(BUILD)/report-example.ptlog \
	    -- $(BUILD)/tests/helpers/named_threads
	$(CLI) report $(BUILD)/report-example.ptlog -o $(BUILD)/report-example.html
	chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1400,900 \
	    --user-data-dir=/tmp/posixtrace-chromium \
	    --screenshot=docs/report-example.png file://$(abspath $(BUILD))/report-example.html

stress:
	@scripts/install-deps.sh
	@scripts/mount-tracefs.sh
	@$(MAKE) --no-print-directory all
	$(STRESS) --total $(STRESS_SECONDS) --seconds 10

bench:
	@scripts/install-deps.sh --bench
	@scripts/mount-tracefs.sh
	@$(MAKE) --no-print-directory all $(BUILD)/bench/bench_lttng $(BUILD)/bench/usdt_reference
	@bench/run.sh $(BUILD)
	@echo; bench/thread_switches.sh $(BUILD)
	@echo; bench/log_bench.sh $(BUILD)
	@echo; bench/burst.sh $(BUILD)
	@echo; bench/push_bench.sh $(BUILD)

install: all
	install -d $(PREFIX)/include/posix_trace $(PREFIX)/lib/pkgconfig $(PREFIX)/bin
	install -m 644 include/trace.h $(PREFIX)/include/trace.h
	install -m 644 include/posix_trace/*.h $(PREFIX)/include/posix_trace/
	install -m 755 $(SHLIB) $(PREFIX)/lib/
	ln -sf libposixtrace.so.$(SOVERSION) $(PREFIX)/lib/libposixtrace.so
	install -m 644 $(STLIB) $(PREFIX)/lib/
	install -m 755 $(CLI) $(PREFIX)/bin/posixtrace
	install -d $(PREFIX)/share/man/man1 $(PREFIX)/share/man/man3 $(PREFIX)/share/man/man7
	for page in man/*.[137]; do \
	    install -m 644 $$page $(PREFIX)/share/man/man$${page##*.}/; \
	done
	install -d $(PREFIX)/share/posixtrace
	install -m 644 share/clickhouse.sql $(PREFIX)/share/posixtrace/clickhouse.sql
	sed -e 's|@PREFIX@|$(or $(PC_PREFIX),$(abspath $(PREFIX)))|' -e 's|@VERSION@|$(VERSION)|' \
	    scripts/posixtrace.pc.in > $(PREFIX)/lib/pkgconfig/posixtrace.pc

# The Debian package of what install installs, under /usr.
deb: all
	@scripts/make-deb.sh $(BUILD) $(VERSION) $(SOVERSION)

format:
	clang-format -i $$(find userspace tests bench examples include bpf -name '*.[ch]pp' -o -name '*.[ch]' | grep -v vmlinux)

clean:
	rm -rf build build-asan

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(STRESS_OBJS:.o=.d)

# ---- fuzzing: `make fuzz` builds the libFuzzer targets of fuzz/ into
# build-fuzz/ (clang, ASan+UBSan); scripts/fuzz.sh runs them:
#   log_reader  the trace log reader (logs come from anywhere)
#   usdt_notes  a traced process's ELF files: USDT notes, PT_INTERP, symbols
#   name_table  a traced process's user event name table (its memory)
#   outputs     every writer of names, strings and payloads, parsed back
FUZZ_BUILD    := build-fuzz
FUZZ_CXX      ?= clang++
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined
# -D_Bool=bool: the generated skeleton uses C's _Bool, which g++ accepts in
# C++ and clang++ does not; the library's noipa attributes are GCC's.
FUZZ_CXXFLAGS := -std=c++20 -g -O1 -fno-omit-frame-pointer $(WARNINGS) -pthread \
                 -Iinclude -Iuserspace -Iuserspace/lib -Ibpf -I$(BUILD)/gen \
                 -DPOSIXTRACE_VERSION='"$(VERSION)"' -D_Bool=bool -Wno-unknown-attributes
FUZZERS       := log_reader usdt_notes name_table outputs
FUZZ_BINS     := $(FUZZERS:%=$(FUZZ_BUILD)/%_fuzzer)
FUZZ_LIB_OBJS := $(LIB_SRCS:%.cpp=$(FUZZ_BUILD)/obj/%.o)
FUZZ_CLI_SRCS := $(addprefix userspace/cli/,event_format.cpp safe_text.cpp export/chrome_writer.cpp \
                 export/event_rows.cpp push/event_block.cpp push/native_block.cpp export/output_file.cpp report/report_page.cpp report/report_assets.cpp \
                 report/timeline.cpp threads/thread_table.cpp)
FUZZ_CLI_OBJS := $(FUZZ_CLI_SRCS:%.cpp=$(FUZZ_BUILD)/obj/%.o)

.PHONY: fuzz fuzz-clean
fuzz: $(FUZZ_BINS)

$(FUZZ_BUILD)/obj/%.o: %.cpp $(SKEL)
	@mkdir -p $(@D)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -fsanitize=fuzzer-no-link $(FUZZ_SAN) -MMD -MP -c $< -o $@

$(FUZZ_BUILD)/outputs_fuzzer: $(FUZZ_CLI_OBJS)
$(FUZZ_BUILD)/%_fuzzer: $(FUZZ_BUILD)/obj/fuzz/%_fuzzer.o $(FUZZ_LIB_OBJS)
	$(FUZZ_CXX) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $^ $(LDLIBS_LIB)

# The objects come from a chain of pattern rules: keep them, or every
# `make fuzz` (each run of scripts/fuzz.sh) would rebuild them all.
.SECONDARY: $(FUZZ_LIB_OBJS) $(FUZZ_CLI_OBJS) $(FUZZERS:%=$(FUZZ_BUILD)/obj/fuzz/%_fuzzer.o)

fuzz-clean:
	rm -rf $(FUZZ_BUILD)

-include $(FUZZ_LIB_OBJS:.o=.d) $(FUZZ_CLI_OBJS:.o=.d) $(FUZZERS:%=$(FUZZ_BUILD)/obj/fuzz/%_fuzzer.d)
