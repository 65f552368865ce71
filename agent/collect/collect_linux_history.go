//go:build linux

package collect

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// collectLinuxHistory starts the collectors of the history and device
// datasets: logon-history, event-log-summary, installed-updates, monitors,
// usb-devices, scsi-controllers and sound-devices. A source that is absent (no journal in a
// container, no /sys/class/drm on a server) gives an empty dataset and a
// log line; nothing is made up.
func collectLinuxHistory(ctx context.Context, c *collector) {
	c.do("logon-history", func() error {
		since := time.Now().AddDate(0, 0, -logonHistoryDays)
		wtmp, werr := readTail("/var/log/wtmp", 8<<20)
		btmp, _ := readTail("/var/log/btmp", 8<<20) // root only
		var logons []utmpRecord
		switch {
		case hasCommand("wtmpdb") && fileExists("/var/lib/wtmpdb/wtmp.db"):
			// Systems that replaced wtmp with wtmpdb (its Y2038-safe
			// database: Debian 13, openSUSE) print the history with
			// `wtmpdb last`; a wtmp left from before the switch is stale.
			// -w: whole user and host names (else cut to 8 and 16).
			out, err := run(ctx, commandTimeout, "wtmpdb", "last", "-w", "--time-format", "iso")
			if err != nil {
				c.setDataset(datasetLogonHistory, nil)
				return err
			}
			logons = parseLastISO(out)
		case werr == nil:
			logons = parseUtmp(wtmp)
		default:
			c.setDataset(datasetLogonHistory, nil)
			return errNotFound("/var/log/wtmp")
		}
		c.setDataset(datasetLogonHistory, logonHistoryRows(logons, parseUtmp(btmp), since))
		return nil
	})
	c.do("event-log-summary", func() error {
		if !hasCommand("journalctl") || !(dirHasEntries("/var/log/journal") || dirHasEntries("/run/log/journal")) {
			c.setDataset(datasetEventLogSummary, nil)
			return errNotFound("systemd journal (no journal files)")
		}
		since := "--since=@" + strconv.FormatInt(time.Now().Add(-24*time.Hour).Unix(), 10)
		var rows []map[string]any
		count := func(r io.Reader) error {
			var err error
			rows, err = countJournal(r)
			return err
		}
		args := []string{since, "--priority=0..4", "--output=json", "--no-pager", "--quiet"}
		// --output-fields (systemd 236) keeps the output small; older
		// journalctl (RHEL 7) rejects it and prints every field.
		err := runStream(ctx, 90*time.Second, count, "journalctl", append(args, "--output-fields=PRIORITY,SYSLOG_FACILITY,SYSLOG_IDENTIFIER,_COMM")...)
		if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "timed out") {
			err = runStream(ctx, 90*time.Second, count, "journalctl", args...)
		}
		if err != nil {
			c.setDataset(datasetEventLogSummary, nil)
			return err
		}
		c.setDataset(datasetEventLogSummary, rows)
		return nil
	})
	c.do("installed-updates", func() error {
		rows, err := linuxInstalledUpdates()
		c.setDataset(datasetInstalledUpdates, rows)
		return err
	})
	c.do("monitors", func() error {
		rows, err := linuxMonitors("/")
		c.setDataset(datasetMonitors, rows)
		if errors.Is(err, fs.ErrNotExist) {
			return errNotFound("/sys/class/drm (no graphics)")
		}
		return err
	})
	c.do("usb-devices", func() error {
		rows, err := linuxUSBDevices("/", loadHWIDs("usb.ids"))
		c.setDataset(datasetUSBDevices, rows)
		if errors.Is(err, fs.ErrNotExist) {
			return errNotFound("/sys/bus/usb (no USB)")
		}
		return err
	})
	c.do("scsi-controllers", func() error {
		rows, err := linuxStorageControllers("/", loadHWIDs("pci.ids"))
		c.setDataset(datasetSCSIControllers, rows)
		if errors.Is(err, fs.ErrNotExist) {
			return errNotFound("/sys/bus/pci")
		}
		return err
	})
	c.do("sound-devices", func() error {
		rows, err := linuxSoundDevices("/")
		c.setDataset(datasetSoundDevices, rows)
		if errors.Is(err, fs.ErrNotExist) {
			return errNotFound("/proc/asound (no sound cards)")
		}
		return err
	})
}

// readTail reads at most max bytes of the end of a file of utmp records,
// cut at a record boundary: the newest records of a large btmp.
func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := fi.Size()
	rec := utmpSize(size)
	start := int64(0)
	if size > max {
		start = size - max
		start += (rec - start%rec) % rec
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

func dirHasEntries(dir string) bool {
	ents, err := os.ReadDir(dir)
	return err == nil && len(ents) > 0
}

// linuxInstalledUpdates reads the package upgrade history: dpkg.log (and
// its rotated copies) with apt's history for who asked, else dnf.rpm.log,
// else yum.log. A system with none of them (a minimal container whose logs
// were removed) has no history to report.
func linuxInstalledUpdates() ([]map[string]any, error) {
	if logs := rotated("/var/log/dpkg.log"); len(logs) > 0 {
		var ups []dpkgUpgrade
		for _, b := range logs {
			ups = append(ups, parseDpkgLog(b, time.Local)...)
		}
		requestedBy := map[string]string{}
		// Oldest first, so that a later run's requester wins.
		apt := rotated("/var/log/apt/history.log")
		for i := len(apt) - 1; i >= 0; i-- {
			for k, v := range parseAptHistory(apt[i]) {
				requestedBy[k] = v
			}
		}
		return dpkgInstalledUpdates(ups, requestedBy, dpkgArch(runtime.GOARCH)), nil
	}
	if logs := rotated("/var/log/dnf.rpm.log"); len(logs) > 0 {
		var rows []map[string]any
		for _, b := range logs {
			rows = append(rows, parseDnfRPMLog(b)...)
		}
		return newestRows(rows, "installedAt"), nil
	}
	if fi, err := os.Stat("/var/log/yum.log"); err == nil {
		b, err := os.ReadFile("/var/log/yum.log")
		if err != nil {
			return nil, err
		}
		return parseYumLog(b, fi.ModTime(), time.Local), nil
	}
	return nil, errNotFound("dpkg.log, dnf.rpm.log or yum.log")
}

// rotated reads a log and its rotated copies (path.1, path.2.gz, …, or
// path-20261101 as logrotate's dateext names them), newest first. Files
// that cannot be read are skipped.
func rotated(path string) [][]byte {
	matches, _ := filepath.Glob(path + "[.-]*")
	sort.Slice(matches, func(i, j int) bool { return rotationOrder(path, matches[i]) < rotationOrder(path, matches[j]) })
	var out [][]byte
	for _, p := range append([]string{path}, matches...) {
		b, err := readMaybeGzip(p)
		if err == nil && len(b) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// rotationOrder sorts rotated copies newest first: .1 before .2.gz, and
// -20261101 before -20261001.
func rotationOrder(base, p string) string {
	suffix := strings.TrimSuffix(strings.TrimPrefix(p, base), ".gz")
	if n, err := strconv.Atoi(strings.TrimPrefix(suffix, ".")); err == nil {
		return fmt.Sprintf("0%08d", n)
	}
	// dateext: newer dates sort first.
	var inv strings.Builder
	for _, r := range suffix {
		if r >= '0' && r <= '9' {
			inv.WriteRune('9' - r + '0')
		} else {
			inv.WriteRune(r)
		}
	}
	return "1" + inv.String()
}

func readMaybeGzip(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !strings.HasSuffix(p, ".gz") {
		return io.ReadAll(io.LimitReader(f, 64<<20))
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	return io.ReadAll(io.LimitReader(z, 64<<20))
}

// loadHWIDs reads the first usb.ids or pci.ids found (usbutils,
// pciutils, hwdata); without one, devices are named by their ids.
func loadHWIDs(name string) hwIDs {
	for _, dir := range []string{"/usr/share/hwdata", "/usr/share/misc", "/usr/share", "/var/lib/usbutils", "/var/lib/pciutils"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil {
			return parseHWIDs(b)
		}
	}
	return hwIDs{}
}
