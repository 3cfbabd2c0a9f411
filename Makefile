# timebox: see README.md (`make help` lists the targets; plain `make` runs `make run`). Every target is phony; one line per recipe.
BINARY := handler
DIST ?= dist
PACKAGE ?= timebox.zip
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
FUZZTIME ?= 10s
# TOOLS: the Go packages go.mod's ignore keeps out of ./... (and so out of go install ./...), named where they are checked.
TOOLS := ./perf/cmd/perf ./perf/cmd/hello ./perf/cmd/floor ./perf/cmd/hostile ./perf/cmd/quotaload ./perf/internal/proc ./scripts/vulncheck ./internal/tokens/internal/vocabgen
.PHONY: run help azurite test test-go test-client test-e2e test-sdk test-spfx sppkg lint fmt build bench bench-quota perf hostile fuzz sim start package clean

# run: the main job; with no AZURE_OPENAI_ENDPOINT it starts the simulator, the handler and the demo page.
run:
	bash scripts/run.sh

# help: every target, with what it does (plain `make` runs `make run`, the first target).
help:
	@echo 'make with no target runs make run.' && awk '/^# [a-z0-9-]+: /{c=substr($$0,3); next} /^# /{c=c " " substr($$0,3); next} /^[a-z0-9-]+:/{i=index(c,": "); if(i) printf "  make %-12s %s\n", substr(c,1,i-1), substr(c,i+2)} {c=""}' $(firstword $(MAKEFILE_LIST))

# test: every test (Go with the race detector, vet, format and staticcheck; the TypeScript client; the browser tests; the OpenAI SDK tests; the SPFx solution).
test: lint test-go test-client test-e2e test-sdk test-spfx

# test-go: the Go tests, race detector on, shuffled; the quota tests against a real Azurite, installed first.
test-go: azurite
	go test -race -shuffle=on -count=1 ./... $(TOOLS)

# azurite: Azurite (the Azure Storage emulator) and the Node 22 it runs on, pinned in tools/azurite, installed when its lock file changed.
azurite:
	bash scripts/azurite.sh install

# test-client: the TypeScript client's tests (node:test).
test-client:
	cd client && npm ci --no-audit --no-fund && npm test

# test-spfx: the SPFx solution's tests (Heft's Jest), its production .sppkg and the package checks (Node 22 from spfx/tools/node).
test-spfx:
	bash spfx/scripts/build.sh test

# sppkg: the SPFx solution's production package, spfx/sharepoint/solution/timebox-ask.sppkg.
sppkg:
	bash spfx/scripts/build.sh sppkg

# test-sdk: the official OpenAI SDKs against the real handler and simulator: openai on npm (pinned) in Node and headless Chromium, openai on PyPI (pinned by hash, in sdk/python/.venv).
test-sdk:
	bash sdk/run.sh

# test-e2e: the browser tests (Debian chromium + playwright-core) against the real handler and simulator.
test-e2e:
	bash e2e/run.sh

# lint: go vet, a formatting check, staticcheck and govulncheck (scripts/vulncheck.sh: the pinned vulnerability database).
lint:
	@echo 'lint: go vet, gofmt' && go vet ./... $(TOOLS) && test -z "$$(gofmt -l $$(git ls-files '*.go'))" && echo 'lint: staticcheck (builds it the first time: 1-2 min on 2 cores)' && go run $(STATICCHECK) ./... $(TOOLS) && TOOLS='$(TOOLS)' bash scripts/vulncheck.sh

# fmt: format the Go code.
fmt:
	gofmt -w $$(git ls-files '*.go')

# build: the linux/amd64 handler binary, named as host.json names it, at the repo root.
build:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $(BINARY) ./cmd/handler

# bench: every benchmark with allocation counts.
bench:
	go test -run '^$$' -bench . -benchmem ./...

# bench-quota: the quota store under load (perf/cmd/quotaload): 40 stores x 4 callers against Azurite, 8 ms added per store call,
# one tenant then 40; QUOTALOAD_FLAGS='-stores 16 -duration 5s' changes the run (docs/operations.md, Quotas). Not part of make test.
bench-quota: azurite
	go run ./perf/cmd/quotaload $(QUOTALOAD_FLAGS)

# perf: the handler side by side with plain-Go floors on a local upstream (docs/operations.md, Performance; one to two minutes).
# PERF_BEFORE=<git revision> measures that revision's handler in the same rounds. Not part of make test.
perf:
	bash scripts/perf.sh

# hostile: the memory rows and the rows of callers that stop reading, against the real binary; peak RSS, holds, exit.
hostile:
	bash scripts/hostile.sh

# fuzz: every fuzz target for FUZZTIME each (decoders, extractors, prompt fitting, simulator directives).
fuzz:
	bash scripts/fuzz.sh $(FUZZTIME)

# sim: the Azure OpenAI simulator alone on 127.0.0.1:8081 (api-key sim-key).
sim:
	go run ./cmd/aoaisim -addr 127.0.0.1:8081 -api-key sim-key

# start: the real Functions host (Azure Functions Core Tools 4.x, the func command) over the built handler; needs
# local.settings.json (copy local.settings.json.example, which calls the simulator: run make sim in another terminal first).
start:
	@bash scripts/start.sh

# package: what to deploy (host.json, the function folder, the handler binary), staged in DIST (the folder
# azure.yaml names; azd zips it) and zipped as PACKAGE (for az functionapp deployment or func). Both git-ignored.
package: build
	rm -rf $(DIST) $(PACKAGE) && mkdir -p $(DIST)/proxy && cp host.json $(BINARY) $(DIST)/ && cp proxy/function.json $(DIST)/proxy/ && (cd $(DIST) && zip -qr - host.json proxy $(BINARY)) > $(PACKAGE)

# clean: remove what the build made.
clean:
	rm -rf $(BINARY) $(DIST) $(PACKAGE) bin client/dist spfx/sharepoint spfx/lib spfx/lib-commonjs spfx/lib-dts spfx/dist spfx/temp spfx/release spfx/jest-output
