//go:build !unix

package localcluster

import "syscall"

// procAttr leaves the node processes' attributes as they are.
func procAttr() *syscall.SysProcAttr { return nil }
