// The examples are a module of their own, built as a game studio would build
// its game: against overworld's public packages only. Its path is not under
// github.com/overworld/overworld on purpose: the go command lets any module
// whose path lies under that prefix import overworld's internal packages, so
// this path is what makes the compiler enforce the public boundary.
module example.com/overworld-examples

go 1.26.8

require github.com/overworld/overworld v0.0.0

require (
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/go-metrics v0.7.0 // indirect
	github.com/hashicorp/golang-lru v1.0.2 // indirect
	github.com/hashicorp/serf v0.11.0 // indirect
	golang.org/x/tools v0.49.0 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)

replace github.com/overworld/overworld => ../
