package lab

import "errors"

// ErrConfig reports an invalid experiment configuration: every lab
// package's Validate, and every run that validates its configuration,
// returns an error wrapping it, with a message naming the field and the
// value. Commands map it to a usage error.
var ErrConfig = errors.New("lab: invalid config")
