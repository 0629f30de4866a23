//go:build !unix

package live

func lowPriority(int) {}
