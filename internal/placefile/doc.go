// Package placefile owns the JSON files of the placement commands
// (overworld assign, balance and select): their formats, strict decoding
// that rejects unknown fields, trailing data and invalid values with an
// error naming the field (and the event or index), and one run of the
// algorithm (place/cma, place/balance, place/spd) on a decoded file, whose
// result is ready to encode as JSON.
//
// It reads bytes and returns values: the caller reads the file, parses its
// own flags into the arguments here, and writes the result. A rejected
// input returns an error and no result; nothing here panics on any input.
package placefile
