//go:build unix

package localcluster

import "syscall"

// procAttr puts a node process in a process group of its own, so that the
// signals a terminal sends to its foreground group (Ctrl-C's SIGINT,
// Ctrl-Z's SIGTSTP) reach the program that started the cluster and not the
// nodes: that program stops them in order (Stop) and keeps their figures.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
