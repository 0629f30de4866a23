// The examples are a module of their own, built as a game studio would build
// its game: against overworld's public packages only. Its path is not under
// github.com/overworld/overworld on purpose: the go command lets any module
// whose path lies under that prefix import overworld's internal packages, so
// this path is what makes the compiler enforce the public boundary.
module example.com/overworld-examples

go 1.26.8

require github.com/overworld/overworld v0.0.0

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/quic-go/quic-go v0.65.0 // indirect
	golang.org/x/crypto v0.57.0 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/overworld/overworld => ../
