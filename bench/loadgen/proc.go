package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// readCPUTicks returns utime+stime of pid (all threads) from /proc/PID/stat.
func readCPUTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// comm may contain spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc/PID/stat format")
	}
	f := bytes.Fields(b[i+1:])
	// After ')': state is field 3 of the man page, so utime (14) and stime (15)
	// are at offsets 11 and 12.
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	u, err := strconv.ParseInt(string(f[11]), 10, 64)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseInt(string(f[12]), 10, 64)
	if err != nil {
		return 0, err
	}
	return u + s, nil
}

// readRSSKiB returns VmRSS of pid in KiB from /proc/PID/status.
func readRSSKiB(pid int) (int64, error) { return readStatusKiB(pid, "VmRSS:") }

// readStatusKiB returns one "Field:  N kB" line of /proc/PID/status.
func readStatusKiB(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if rest, ok := bytes.CutPrefix(line, []byte(field)); ok {
			f := bytes.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.ParseInt(string(f[0]), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/PID/status", field)
}

// cpuWindow samples a process's CPU time at the start and end of the
// measured window, so warm-up and drain are not charged to the window.
type cpuWindow struct {
	done chan struct{}
	ms   float64
	ok   bool
}

func startCPUWindow(pid, clkTck int, from, to time.Time) *cpuWindow {
	c := &cpuWindow{done: make(chan struct{})}
	if pid <= 0 {
		close(c.done)
		return c
	}
	go func() {
		defer close(c.done)
		time.Sleep(time.Until(from))
		a, err := readCPUTicks(pid)
		if err != nil {
			return
		}
		time.Sleep(time.Until(to))
		b, err := readCPUTicks(pid)
		if err != nil {
			return
		}
		c.ms = float64(b-a) * 1000 / float64(clkTck)
		c.ok = true
	}()
	return c
}

func (c *cpuWindow) wait() (float64, bool) {
	<-c.done
	return c.ms, c.ok
}
