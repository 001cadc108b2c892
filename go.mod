module github.com/structgen/structgen

go 1.26.8

require (
	github.com/alecthomas/kong v1.17.0
	github.com/alecthomas/participle/v2 v2.1.4
	github.com/invopop/jsonschema v0.13.0
	github.com/ollama/ollama v0.24.0
	github.com/santhosh-tekuri/jsonschema/v5 v5.3.1
	github.com/x448/float16 v0.8.4
	golang.org/x/text v0.31.0
	golang.org/x/tools v0.39.0
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/brianvoe/gofakeit/v7 v7.18.1
	github.com/buger/jsonparser v1.1.1 // indirect
	github.com/dlclark/regexp2 v1.11.4 // indirect
	github.com/emirpasic/gods/v2 v2.0.0-alpha // indirect
	github.com/kr/pretty v0.3.0 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/rogpeppe/go-internal v1.8.0 // indirect
	github.com/wk8/go-ordered-map/v2 v2.1.8 // indirect
	golang.org/x/sync v0.18.0 // indirect
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
