// The examples are a module of their own, built as a game studio would build
// its game: against overworld's public packages only. Its path is not under
// github.com/overworld/overworld on purpose: the go command lets any module
// whose path lies under that prefix import overworld's internal packages, so
// this path is what makes the compiler enforce the public boundary.
module example.com/overworld-examples

go 1.26.8

require github.com/overworld/overworld v0.0.0

replace github.com/overworld/overworld => ../
