//go:build !linux

package cli

const adviseSupported = false

type hugeAdvisor struct{}

func (*hugeAdvisor) advise() (int64, error) { return 0, nil }
