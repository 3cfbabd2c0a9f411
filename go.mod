module github.com/timebox-dev/timebox

go 1.26.0

require (
	github.com/stretchr/testify v1.12.1
	github.com/tiktoken-go/tokenizer v0.10.0
)

require (
	github.com/dlclark/regexp2/v2 v2.5.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)
