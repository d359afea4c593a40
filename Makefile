# csi-olm. `make help` lists the targets. `make catalog` and `make test` set up everything they
# need on a fresh machine: pinned tools are built into $(TOOLS_DIR), outside the clone.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory

GO ?= go
TOOLS_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/csi-olm/tools
export CSI_OLM_TOOLS_DIR := $(TOOLS_DIR)

# Every build but the race detector's compiles its packages one way: static (no cgo) and -trimpath,
# as the operator's image carries it. Go's cache keys a compiled package by those settings, so one
# compile of the packages they share (the standard library, client-go, operator-registry...) serves
# the tools, the operator's binaries, csi-olm, vet and the tests without -race; a fresh machine
# compiled them two and three times over before (BENCHMARKS.md#ci-time). The race detector needs
# cgo, so its builds share nothing with these: RACE_TEST turns cgo back on and keeps the full file
# paths its reports print.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

BIN := bin
CSI_OLM := $(BIN)/csi-olm
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/csi-olm/csi-olm/internal/version.version=$(VERSION) \
	-X github.com/csi-olm/csi-olm/internal/version.commit=$(COMMIT)

# API packages and the directories their CRDs are generated into: <types>=<crd dir>.
APIS := sharedvolume/api/v1alpha1=sharedvolume/crd \
	operator/api/v1alpha1=operator/fencecrd \
	bundle/drivers/communityefs/v1alpha1=bundle/drivers/communityefs/communityefscrd \
	bundle/drivers/ebsdriver/v1alpha1=bundle/drivers/ebsdriver/ebscrd \
	bundle/drivers/maniladriver/v1alpha1=bundle/drivers/maniladriver/manilacrd
API_SOURCES := $(filter-out %/zz_generated.deepcopy.go,$(foreach api,$(APIS),$(wildcard $(firstword $(subst =, ,$(api)))/*.go)))
GENERATED_STAMP := $(BIN)/.generated

##@ Main

.PHONY: catalog
catalog: bundle ## Generate and validate the bundles and catalogs, and draw the upgrade graphs: the main job
	$(CSI_OLM) catalog generate --bundles bundle --output-dir catalog
	$(CSI_OLM) catalog validate catalog/community --bundles bundle
	$(CSI_OLM) catalog validate catalog/certified --community catalog/community --bundles bundle
	rm -rf catalog/graphs
	$(CSI_OLM) catalog graph catalog/community -o dot,mermaid,svg --output-dir catalog/graphs
	$(CSI_OLM) catalog graph catalog/certified --community catalog/community -o dot,mermaid,svg --output-dir catalog/graphs
	@# The simulation picture is of the newest minor's catalogs.
	m=$$(basename "$$(ls -d catalog/certified/v4.*/ | sort -V | tail -n1)") && \
	$(CSI_OLM) catalog simulate catalog/certified/$$m --installed aws-efs-operator.v0.0.6 --installed-from catalog/community/$$m -o svg > catalog/graphs/simulate.svg.tmp && \
	mv catalog/graphs/simulate.svg.tmp catalog/graphs/simulate-$$m-aws-efs-operator.v0.0.6.svg

# The tools the tests take from the environment (test/testutil): what catalog images carry, and
# the checker of the drivers' external-storage test manifests.
TOOL_ENV = CSI_OLM_OPM="$$(hack/tools.sh opm)" CSI_OLM_GRPC_HEALTH_PROBE="$$(hack/tools.sh grpc_health_probe)" \
	CSI_OLM_STORAGE_MANIFEST_CHECK="$$(hack/tools.sh storage-manifest-check)"

# The tiers' tools (hack/tools.sh names). `make test` builds only what its tests run: the control
# plane with kwok, the registry, opm and the probe, the upstream checker of the drivers' test
# manifests, the real csi-provisioner and OLM's CRDs. `make e2e` adds the real node's binaries and
# OLM itself. A test that asks for a tool its tier did not build still gets it, built on demand.
TEST_TOOLS := etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwok-crds openshift-crds \
	registry opm grpc_health_probe storage-manifest-check csi-provisioner olm-crds
E2E_TOOLS := $(TEST_TOOLS) kubelet kube-proxy kubectl pause coredns olm catalog cpb kube-rbac-proxy operator-controller catalogd olmv1-crds

# Every `go test` of the test tiers ends at this timeout, and only a stuck test should reach it: the
# tests themselves wait on progress, not on time (docs/development.md#waiting-in-tests), and on a
# machine twice as slow the 100,000-claim fence alone took 28 minutes of the campaigns' 30. It is
# below CI's 90 minutes, so that a stuck test's goroutine dump still reaches CI's log.
TEST_BACKSTOP := 80m

# The ledger: every `go test` of `make test` and `make e2e` runs with -json, and hack/testledger
# keeps the stream in $(LEDGER_DIR)/NAME.jsonl while printing what plain `go test` prints. From
# those files each target, and .ci/run for the whole run, lists the slowest tests.
# $(call ledger,NAME) is the end of such a command line.
LEDGER_DIR := $(BIN)/test-json
TESTLEDGER := $(BIN)/testledger
ledger = | $(TESTLEDGER) tee $(LEDGER_DIR)/$(1).jsonl
SLOWEST = $(TESTLEDGER) slowest -n 15

# $(call beside,A,B) runs A in the background while B runs, waits for both, and fails if either did.
# The first command runs in a group: bash's wait on a background pipeline that has already ended
# returns its last command's status, not pipefail's, so a `go test | testledger tee` lane that
# failed before the other lane ended passed (a real-node failure went unseen that way).
beside = { $(1); } & beside=$$!; rc=0; $(2) || rc=$$?; wait $$beside || rc=$$?; exit $$rc

# The operator package's campaigns and corpus, about half of its time: a test process of their own.
OPERATOR_CAMPAIGNS := ^(TestDriverNeverDeletedUnderAVolume|TestOperatorKillCampaign|TestControlPlaneFaultsConverge|TestClusterCSIDriverCorpus)$$
# The operator package's other tests, in OPERATOR_SHARDS processes side by side: each test starts
# a cluster of its own and mostly waits on it, and one after another they were the long pole of
# `make test`. `go test -list` names them into $(OPERATOR_TESTS) and every OPERATOR_SHARDS-th goes
# to the same process, so a new test lands in one with no list kept by hand.
# $(call operator_shard,K) is shard K's -run.
OPERATOR_SHARDS := 2
OPERATOR_TESTS := $(BIN)/operator-tests.txt
operator_shard = "^($$(awk 'NR % $(OPERATOR_SHARDS) == $(1)' $(OPERATOR_TESTS) | paste -sd'|'))$$"
# The catalog verbs' tests on the field-sized catalogs (test/synthcatalog's 800 bundles): one
# goroutine resolving start after start, which the race detector makes five times slower. They
# check results at scale and run without it; the simulator's concurrency is race-tested on the
# project's catalogs (TestSimulateConcurrently).
FIELD_TESTS := ^TestField
# The packages whose tests compress and copy image layers, which takes ten times longer under the
# race detector, and which start no goroutines of their own: the publishing's concurrency
# (registry.PinAll) is race-tested in images/registry.
IMAGE_PACKAGES := ./release ./images
# The packages whose code, and the module's code it imports, starts no goroutine (the bundle
# definitions, generator and linters, and the layout rules): the race detector has nothing to find
# there and made them three times slower. TestSequentialPackagesStartNoGoroutine (test/layout)
# fails when one of them, or what it imports, starts a goroutine.
SEQUENTIAL_PACKAGES := ./bundle/definition ./bundle/drivers/efsdriver ./bundle/drivers/ebsdriver/ebscrd ./bundle/drivers/maniladriver/manilacrd ./bundle/generate ./bundle/lint ./bundle/registryv1 ./test/layout
NO_RACE_PACKAGES := $(IMAGE_PACKAGES) $(SEQUENTIAL_PACKAGES)
# The SharedVolume controller's tests, over three minutes under -race, go first among the other
# packages: last (in go list's order) they were the long pole of `make test`.
RACE_FIRST := ./sharedvolume/controller

# `go test` links a test binary for every run, each package's in a few seconds of CPU, and a sixth
# of `make test`'s CPU went to those links; without DWARF (-w) they take half as long. Panics and
# the race detector's reports read the symbol table, which stays. The binaries the tests build and
# ship (testutil.BuildBinary) are built with their own flags.
# go test's own vet (-vet=off here) runs a subset of the checks of `make verify`'s `go vet ./...`
# (test files included), which CI runs too: its different set of checks made it a second vet of
# every package and of the facts of everything they import, 92 s of a fresh machine's CPU.
GO_TEST := $(GO) test -ldflags=-w -vet=off
RACE_TEST := CGO_ENABLED=1 GOFLAGS='$(filter-out -trimpath,$(GOFLAGS))' $(GO_TEST) -race

# The operator's race-instrumented test binary, linked once: `go test` links a test binary again
# for every run, and the listing, the campaigns and the two shards were four links of 19 CPU s
# each (224 MB), while `go test -c` takes the binary from Go's cache when nothing changed. Each
# run goes through test2json, as `go test -json` does, in the package's directory, where go test
# runs a package's tests.
OPERATOR_RACE_BIN := $(BIN)/operator-race.test
run_operator_race = $(TOOL_ENV) env -C operator $(GO) tool test2json -t -p github.com/csi-olm/csi-olm/operator \
	$(abspath $(OPERATOR_RACE_BIN)) -test.v=test2json -test.paniconexit0 -test.count=1 -test.timeout=$(TEST_BACKSTOP) -test.run $(1)

# The operator's packages compiled as its image carries it (static, -trimpath), once: the
# operator tests run that binary and the release tests put it in an image, each building it with
# `go build` from Go's cache (testutil.BuildBinary); two test processes starting those builds at
# once would each compile it.
COMPILE_STATIC_OPERATOR = $(GO) build -o /dev/null ./cmd/aws-efs-csi-driver-operator

.PHONY: test
# -count=1: a test's result is never taken from Go's cache, which does not know the tools the
# tests run. The operator package, the long pole, runs in 1 + OPERATOR_SHARDS processes side by
# side, its campaigns and the shards of its other tests, one test binary built and linked once
# first (OPERATOR_RACE_BIN) and listed; all mostly wait on their own clusters.
# The image packages', the sequential packages' and the field tests run without the race detector
# (NO_RACE_PACKAGES, FIELD_TESTS), beside the rest: alone after it, they would leave a core idle
# for minutes.
# The tools build while apt-get installs buildah, which mostly waits on downloads.
test: $(TESTLEDGER) ## Run the tests (unit, golden, real-opm, real-registry and real-apiserver tests, the short campaigns) with the race detector
	@$(MAKE) --no-print-directory -j2 test-tools image-builder
	rm -f $(LEDGER_DIR)/test-*.jsonl
	$(call beside,$(COMPILE_STATIC_OPERATOR),$(RACE_TEST) -c -o $(OPERATOR_RACE_BIN) ./operator/ && \
		env -C operator $(abspath $(OPERATOR_RACE_BIN)) -test.list . | grep '^Test' | grep -Ev '$(OPERATOR_CAMPAIGNS)' >$(OPERATOR_TESTS))
	$(call beside,($(TOOL_ENV) $(GO_TEST) -json -count=1 -timeout $(TEST_BACKSTOP) $(NO_RACE_PACKAGES) $(call ledger,test-norace) && \
		$(TOOL_ENV) $(GO_TEST) -json -count=1 -timeout $(TEST_BACKSTOP) -run '$(FIELD_TESTS)' ./catalog/diff ./catalog/simulate $(call ledger,test-field)),\
		($(call beside,$(call run_operator_race,'$(OPERATOR_CAMPAIGNS)') $(call ledger,test-campaigns),\
		($(call beside,$(call run_operator_race,$(call operator_shard,0)) $(call ledger,test-operator-0),\
		($(call beside,$(call run_operator_race,$(call operator_shard,1)) $(call ledger,test-operator-1),\
		$(TOOL_ENV) $(RACE_TEST) -json -count=1 -timeout $(TEST_BACKSTOP) -skip '$(FIELD_TESTS)' \
		$$($(GO) list $(RACE_FIRST) ./... | grep -v -e /test/e2e -e /operator$$ $(foreach p,$(NO_RACE_PACKAGES),-e $(patsubst ./%,/csi-olm/csi-olm/%,$(p))$$)) \
		$(call ledger,test-race))))))))
	@$(SLOWEST) $(LEDGER_DIR)/test-*.jsonl

# The campaigns' long forms that CI runs: `make test` runs their short forms.
# The removal fence's long form is the field's size: 100,000 EFS claims over 10,000 namespaces.
E2E_CAMPAIGNS := CSI_OLM_CHAOS_STEPS=200 CSI_OLM_FENCE_SCALE=100000 $(GO_TEST) -json -count=1 -timeout $(TEST_BACKSTOP) \
	-run '^(TestDriverNeverDeletedUnderAVolume|TestRemovalFenceAtScale)$$' ./operator/ $(call ledger,e2e-campaigns)

# The end-to-end tests that run a real node: a machine runs one at a time, so they run one after
# another in a process of their own, beside the others (test/e2e's noRealNodeEnv keeps those off
# the host's real node; a test that starts one there fails and names this variable).
E2E_REAL_NODE_TESTS := ^(Test.*RealNode.*|TestSimulateV1MatchesOperatorController)$$
# The other flows run at a lower CPU priority: they end minutes before the real node's lane, whose
# flows run one after another and are `make e2e`'s long pole, so a core both want goes to the real
# node's flows.
E2E_REST_NICE := nice -n 10

.PHONY: e2e
e2e: $(TESTLEDGER) ## Run the end-to-end tests: the real kubelet node, OLM flows, the simulate cross-check, the long campaigns
	@# Side by side: the tools' builds, apt-get's installs (mostly waiting on downloads) and the
	@# end-to-end package's compile (mostly one link).
	@$(MAKE) --no-print-directory -j3 e2e-tools node-deps e2e-compile
	rm -f $(LEDGER_DIR)/e2e-*.jsonl
	@# Side by side: the real node's flows, the other flows and the long campaign each mostly
	@# wait on their own clusters. No binary is cross-compiled here: the operator for arm64 took
	@# six minutes of CPU from the flows, and test/layout's TestShippedMainsBuildTheSameCodeOnEveryPlatform
	@# shows the code of every platform a release ships compiles (`make release` builds them).
	$(call beside,$(E2E_CAMPAIGNS),($(call beside,\
		$(GO_TEST) -json -count=1 -timeout $(TEST_BACKSTOP) -run '$(E2E_REAL_NODE_TESTS)' ./test/e2e/ $(call ledger,e2e-realnode),\
		CSI_OLM_E2E_NO_REAL_NODE=1 $(E2E_REST_NICE) $(GO_TEST) -json -count=1 -timeout $(TEST_BACKSTOP) -skip '$(E2E_REAL_NODE_TESTS)' ./test/e2e/... $(call ledger,e2e-rest))))
	@$(SLOWEST) $(LEDGER_DIR)/e2e-*.jsonl

.PHONY: test-tools e2e-tools e2e-compile
# The end-to-end package, compiled once before the processes that run it would each compile it.
e2e-compile:
	$(GO_TEST) -count=1 -run '^$$' ./test/e2e/ >/dev/null
# Three builds at once: on 2 cores one build's downloads and links overlap another's compiling.
TOOL_JOBS ?= 3
test-tools:
	@hack/tools.sh -j $(TOOL_JOBS) $(TEST_TOOLS) >/dev/null
e2e-tools:
	@hack/tools.sh -j $(TOOL_JOBS) $(E2E_TOOLS) >/dev/null

# BENCH_OUT=FILE keeps the benchmark output in FILE too, in the format benchstat compares
# (BENCHMARKS.md says how to compare two commits).
BENCH_TEE = $(if $(BENCH_OUT),| tee -a $(BENCH_OUT))

.PHONY: bench bench-catalog
bench: tools ## Run the benchmarks (the catalog verbs; operator latency and memory; image pushes and pinning; test bed and OLM flows); BENCH_OUT=FILE keeps the output for benchstat
	@$(if $(BENCH_OUT),: > $(BENCH_OUT))
	@$(MAKE) --no-print-directory bench-catalog
	$(TOOL_ENV) $(GO) test -run '^$$' -bench . -benchtime 5x -count 1 -timeout 30m ./operator/... ./release/... ./test/e2e/... $(BENCH_TEE)
	@$(MAKE) --no-print-directory bench-sharedvolumes

# The SharedVolume benchmarks alone, each on clusters of its own: 1,000 SharedVolumes against
# their raw-client baseline, four runs of about 5 minutes (the Ready ratio must hold in every
# one); one SharedVolume at a time, ten of them; 10,000 across 1,000 namespaces, created and
# deleted, about half an hour. BENCH_OUT=FILE appends to FILE.
.PHONY: bench-sharedvolumes
bench-sharedvolumes: tools ## Run the SharedVolume benchmarks only (1,000 against a raw client, four runs; one at a time; 10,000)
	$(GO) test -v -run '^$$' -bench '^BenchmarkSharedVolumes$$' -benchtime 1x -count 4 -timeout 60m ./sharedvolume/controller $(BENCH_TEE)
	$(GO) test -v -run '^$$' -bench '^BenchmarkOneSharedVolume$$' -benchtime 10x -count 1 -timeout 10m ./sharedvolume/controller $(BENCH_TEE)
	$(GO) test -v -run '^$$' -bench '^BenchmarkSharedVolumesAtScale$$' -benchtime 1x -count 1 -timeout 90m ./sharedvolume/controller $(BENCH_TEE)

# The catalog verbs alone: validate against opm, simulate --all and diff --breaking on the field
# catalogs. They need only opm. BENCH_OUT=FILE appends to FILE.
bench-catalog: ## Run the catalog benchmarks only (validate vs opm; simulate and diff on catalogs of the field's shape)
	CSI_OLM_OPM="$$(hack/tools.sh opm)" $(GO) test -run '^$$' -bench . -benchtime 5x -count 1 -timeout 30m ./catalog/... $(BENCH_TEE)

# Each fuzz target, as `package:target`.
# Each target with the number of inputs it fuzzes: what 30 s gave on 2 idle cores (2026-11-29).
# A number, not a time, so that CI's fuzzing, which runs beside the end-to-end flows in the CPU
# they leave, does as much on any machine. FUZZTIME= fuzzes each for that long instead.
FUZZ_TARGETS = ./catalog/validation:FuzzLoadAndValidate:8000x ./bundle/lint:FuzzBundle:600x \
	./sharedvolume/volumes:FuzzSharedVolumeMapping:400000x

.PHONY: chaos
chaos: tools ## The long reliability campaign (RELIABILITY.md): the driver-deletion property test for 2,000 steps, the kill and control-plane campaigns with new seeds, the move to OLM v1 and back killed at random moments, the bad-input corpus, and each fuzz target for 10 minutes
	CSI_OLM_CHAOS_STEPS=$(or $(CHAOS_STEPS),2000) $(GO) test -count=1 -timeout 120m -run '^TestDriverNeverDeletedUnderAVolume$$' -v ./operator/
	@# Each run draws a seed of its own: every round is 22 more kills, 2 API server restarts, 1 etcd restart and a stall.
	$(GO) test -count=$(or $(CHAOS_ROUNDS),3) -timeout 60m -run '^(TestOperatorKillCampaign|TestControlPlaneFaultsConverge)$$' -v ./operator/
	$(GO) test -count=1 ./test/badinput/
	$(GO) test -count=1 -run '^(TestSharedVolumeCorpus|TestClusterCSIDriverCorpus)$$' ./sharedvolume/controller/ ./operator/
	$(GO) test -count=1 -run '^(TestMigrateCorpus|TestMigrateSubscriptionOLMFaults)$$' ./test/e2e/
	@# The move to OLM v1 and back on the real node, killed after each step, then at random moments.
	CSI_OLM_OLMV1_KILL_ROUNDS=$(or $(OLMV1_ROUNDS),4) $(GO) test -count=1 -timeout 90m -run '^TestOLMv0ToOLMv1OnRealNode$$' -v ./test/e2e/
	$(MAKE) fuzz FUZZTIME=$(or $(FUZZTIME),10m)

.PHONY: fuzz
fuzz: ## Fuzz the catalog loader and validator, the bundle validator and the SharedVolume -> PV/PVC mapping, a set number of inputs each (CI runs it; FUZZTIME=10m fuzzes each that long)
	@set -e; for t in $(FUZZ_TARGETS); do \
		IFS=: read -r pkg target inputs <<<"$$t"; \
		budget=$(or $(FUZZTIME),$$inputs); \
		echo "fuzzing $$target in $$pkg for $$budget"; \
		$(GO_TEST) -run '^$$' -fuzz "^$$target$$" -fuzztime "$$budget" -fuzzminimizetime 2s "$$pkg"; \
	done

.PHONY: run
run: cli tools ## Start the local dev cluster with OLM, serving the project's catalogs
	$(CSI_OLM) dev up

.PHONY: run-down
run-down: cli ## Stop the local dev cluster
	$(CSI_OLM) dev down

##@ Build

.PHONY: bundle
bundle: $(GENERATED_STAMP) cli ## Generate the OLM bundles into bundle/ and validate them, for OLM v1 too
	$(CSI_OLM) bundle generate --output-dir bundle
	$(CSI_OLM) bundle validate --strict --olm v1 bundle

.PHONY: build
build: cli ## Build the binaries into bin/
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/aws-efs-csi-driver-operator ./cmd/aws-efs-csi-driver-operator

# The platforms the operator image is built for: those the EFS definition declares.
PLATFORMS ?= linux/amd64 linux/arm64
OPERATOR_BINARIES := $(foreach p,$(PLATFORMS),$(BIN)/$(subst /,_,$(p))/aws-efs-csi-driver-operator)

.PHONY: operator-binaries
operator-binaries: ## Build the statically linked operator binary for each of PLATFORMS, as its image runs it
	@for p in $(PLATFORMS); do \
		echo "go build aws-efs-csi-driver-operator for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -ldflags "$(LDFLAGS)" \
			-o $(BIN)/$${p/\//_}/aws-efs-csi-driver-operator ./cmd/aws-efs-csi-driver-operator; \
	done

# csi-olm itself, for the machines its users run it on.
CLI_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
CLI_BINARIES := $(foreach p,$(CLI_PLATFORMS),$(BIN)/cli/csi-olm-$(subst /,-,$(p)))

.PHONY: cli-binaries
cli-binaries: ## Build csi-olm for each of CLI_PLATFORMS (linux and darwin, amd64 and arm64), as a release publishes it
	@for p in $(CLI_PLATFORMS); do \
		echo "go build csi-olm for $$p"; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/cli/csi-olm-$${p/\//-} ./cmd/csi-olm; \
	done

.PHONY: images
images: operator-binaries cli tools ## Build the operator, bundle and catalog images into bin/images (an OCI layout), or push them under REGISTRY=
	$(CSI_OLM) images $(foreach b,$(OPERATOR_BINARIES),--operator-binary $(b)) --opm "$$(hack/tools.sh opm)" \
		--grpc-health-probe "$$(hack/tools.sh grpc_health_probe)" --bundles bundle --catalogs catalog $(if $(REGISTRY),--registry $(REGISTRY),--oci-layout $(BIN)/images)

.PHONY: release
release: operator-binaries cli-binaries cli tools ## Pin every image by digest and publish the bundle and catalog images under REGISTRY= (MIRRORS="SRC=DST ..." reads SRC at DST)
	@[[ -n "$(REGISTRY)" ]] || { echo "make release needs REGISTRY=, e.g. REGISTRY=quay.io/csi-olm"; exit 2; }
	$(CSI_OLM) release --registry $(REGISTRY) $(foreach b,$(OPERATOR_BINARIES),--operator-binary $(b)) $(foreach b,$(CLI_BINARIES),--cli-binary $(b)) \
		--opm "$$(hack/tools.sh opm)" --grpc-health-probe "$$(hack/tools.sh grpc_health_probe)" $(foreach m,$(MIRRORS),--mirror $(m)) --output-dir $(or $(OUTPUT),$(BIN)/release)

# Always rebuilt: go build is a cache lookup when nothing changed, and make cannot see Go's inputs.
.PHONY: $(TESTLEDGER)
$(TESTLEDGER):
	$(GO) build -o $@ ./hack/testledger

.PHONY: cli
cli: ## Build bin/csi-olm, stamped with the version and commit (git describe)
	$(GO) build -ldflags "$(LDFLAGS)" -o $(CSI_OLM) ./cmd/csi-olm

# What a real kubelet node needs from Debian: the container runtime, CNI plugins, the forwarder
# between the host's loopback and the node's network namespace, and iptables for kube-proxy.
NODE_PACKAGES := containerd runc containernetworking-plugins socat iptables util-linux iproute2 busybox-static

.PHONY: node-deps
node-deps: ## Install what the test bed's real node needs from Debian's packages (containerd, runc, CNI plugins, socat, iptables, a static busybox) when missing
	@# dpkg-query fails on a package it has never heard of, which is what "missing" means here.
	@missing=$$({ dpkg-query -W -f='$${Status} $${Package}\n' $(NODE_PACKAGES) 2>/dev/null || true; } | \
		awk '$$3 == "installed" { ok[$$4] = 1 } END { n = split("$(NODE_PACKAGES)", p, " "); \
		for (i = 1; i <= n; i++) if (!ok[p[i]]) printf "%s ", p[i] }'); \
	if [[ -n "$$missing" ]]; then \
		echo "installing $$missing(apt-get)"; \
		sudo=; [[ $$(id -u) -eq 0 ]] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# Every Debian package a target installs when missing, and Graphviz, which none installs any more
# (csi-olm draws its pictures itself); hack/fresh-machine.sh purges them first, so a fresh run
# proves that none is needed unasked.
.PHONY: print-debian-packages
print-debian-packages:
	@echo $(NODE_PACKAGES) graphviz buildah

.PHONY: image-builder
image-builder: ## Install buildah from Debian's packages when neither podman nor buildah is there (the efs-utils base image build)
	@command -v podman >/dev/null || command -v buildah >/dev/null || { \
		echo "installing buildah (apt-get)"; \
		sudo=; [[ $$(id -u) -eq 0 ]] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq --no-install-recommends buildah >/dev/null; }

.PHONY: efs-utils-base
efs-utils-base: image-builder ## Build the efs-utils base image of the EFS CSI driver with podman or buildah
	hack/build-efs-utils-base.sh

.PHONY: tools
tools: ## Build the pinned tools (opm, controller-gen, kube binaries with kubelet and kube-proxy, pause, etcd, kwok, OLM, registry, CoreDNS, grpc_health_probe, csi-provisioner, kube-rbac-proxy, storage-manifest-check, benchstat) into $(TOOLS_DIR)
	@hack/tools.sh all >/dev/null

.PHONY: generate
generate: ## Regenerate deepcopy code and CRDs from the Go API types
	@cg="$$(hack/tools.sh controller-gen)"; \
	for api in $(APIS); do \
		types="$${api%%=*}"; crds="$${api#*=}"; \
		echo "controller-gen $$types -> $$crds"; \
		"$$cg" object crd paths="./$$types/..." output:crd:artifacts:config="$$crds"; \
	done
	@mkdir -p $(BIN) && touch $(GENERATED_STAMP)

# Regenerate only when an API type changed since the last generation.
$(GENERATED_STAMP): $(API_SOURCES)
	@$(MAKE) generate

##@ Checks

.PHONY: verify
COMMITTED := $(BIN)/committed

verify: ## Regenerate CRDs, bundles, catalogs and graphs, run gofmt, vet and go mod tidy; fail on any diff, on a catalog change that strands installed users, or on one a cluster upgrade newly strands
	$(GO) mod tidy
	@# The tools modules (hack/tools/*/go.mod), each with its own graph.
	for m in $(dir $(wildcard hack/tools/*/go.mod)); do (cd $$m && $(GO) mod tidy) || exit 1; done
	rm -rf $(COMMITTED) && mkdir -p $(COMMITTED)
	git archive HEAD catalog/community catalog/certified | tar -x -C $(COMMITTED)
	$(MAKE) generate catalog
	$(CSI_OLM) catalog diff --breaking $(COMMITTED)/catalog/community catalog/community
	$(CSI_OLM) catalog diff --breaking $(COMMITTED)/catalog/certified catalog/certified
	@# Every cluster upgrade the trees offer, failing on an install newly stuck by one.
	$(CSI_OLM) catalog cluster-upgrade catalog/community --since $(COMMITTED)/catalog/community
	$(CSI_OLM) catalog cluster-upgrade catalog/certified --since $(COMMITTED)/catalog/certified
	hack/check-tracked-files.sh
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@if ! git diff --exit-code --stat || [[ -n "$$(git status --porcelain --untracked-files=all)" ]]; then \
		git status --short; \
		echo "verify: the tree differs from what the generators produce; run 'make verify' and commit the result"; \
		exit 1; \
	fi

##@ Housekeeping

.PHONY: clean
clean: ## Remove bin/ (the tool cache stays; `make clean-tools` removes it)
	rm -rf $(BIN)

.PHONY: clean-tools
clean-tools: ## Remove the tool cache $(TOOLS_DIR)
	rm -rf $(TOOLS_DIR)

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
		/^[a-zA-Z_-]+:.*?##/ { printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)
