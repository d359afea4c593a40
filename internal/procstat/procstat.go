// Package procstat reads a process's line of /proc/<pid>/stat: its command name, the CPU time it
// has used and when it started. The test bed measures its components with it and testledger the
// programs a CI step ran.
package procstat

import (
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: the kernel reports them to user space
// in USER_HZ ticks, 100 a second on every Linux architecture Go builds for.
const userHZ = 100

// Stat is what a stat line says of its process.
type Stat struct {
	// Comm is the command name the kernel keeps (a kernel thread has no other).
	Comm string
	// CPU is the user and system time used so far.
	CPU time.Duration
	// Start is the start time in ticks after boot: with the pid, it names one process, since
	// pids are reused.
	Start string
}

// Parse reads a stat line. The command name is in parentheses and may hold spaces and
// parentheses itself, so the last ")" ends it; utime, stime and starttime are the 14th, 15th and
// 22nd fields.
func Parse(line string) (Stat, bool) {
	open, end := strings.IndexByte(line, '('), strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, false
	}
	fields := strings.Fields(line[end+1:]) // fields[0] is the 3rd field, the state
	if len(fields) < 20 {
		return Stat{}, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return Stat{}, false
	}
	return Stat{Comm: line[open+1 : end], CPU: time.Duration(utime+stime) * time.Second / userHZ, Start: fields[19]}, true
}
