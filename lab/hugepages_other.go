//go:build !linux

package lab

const adviseSupported = false

type hugeAdvisor struct{}

func (*hugeAdvisor) advise() (int64, error) { return 0, nil }
