package agentdist

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
)

// The version of a release is checked against the binary's own before it
// is published or signed: a release whose binary reports another version
// would be refused by every agent (which runs `NEW version` before it
// switches), or, worse, installed under a version it is not.
//
// How the binary's version is read:
//
//   - a binary for the machine that publishes (same OS and architecture)
//     is run: `FILE version` must answer `patchd-agent VERSION OS/ARCH`;
//   - any other is read, not run. Its Go build information
//     (debug/buildinfo, kept by `go build` even with -s -w) must name the
//     agent's main package and the platform. When it records the
//     build's -ldflags (builds without -trimpath), the last
//     `-X github.com/patchd/patchd/agent.Version=V` there is the version.
//     Otherwise the linker-set variable is looked for in the binary's
//     data: -X stores the value as a string and the variable as a
//     (pointer, length) pair pointing at it, so the binary is accepted
//     as VERSION only if an initialized string variable of its data holds
//     exactly VERSION. The variable's name is stripped with -s, so
//     another string variable holding the same text would pass too; no
//     other variable of the agent holds a version number.

// agentVersionVar is the variable the agent's version is linked into.
const agentVersionVar = "github.com/patchd/patchd/agent.Version"

// agentMainPackage is the agent's main package, as build information names it.
const agentMainPackage = "github.com/patchd/patchd/cmd/patchd-agent"

// VersionMismatchError: the binary does not report the version given.
type VersionMismatchError struct {
	File, Version string
	// Reports is the version the binary reports ("" when it was not read
	// as a whole: see How).
	Reports string
	How     string
}

func (e *VersionMismatchError) Error() string {
	if e.Reports != "" {
		return fmt.Sprintf("%s reports version %s (%s), not %s: build it with -ldflags '-X %s=%s', or give --version %s",
			e.File, e.Reports, e.How, e.Version, agentVersionVar, e.Version, e.Reports)
	}
	return fmt.Sprintf("%s does not hold version %s (%s): build it with -ldflags '-X %s=%s'", e.File, e.Version, e.How, agentVersionVar, e.Version)
}

// CheckBinaryVersion checks that file, an agent for p, reports version,
// a semantic version.
func CheckBinaryVersion(ctx context.Context, file string, p Platform, version string) error {
	if err := agentproto.CheckVersion(version); err != nil {
		return err
	}
	if p.OS == runtime.GOOS && p.Arch == runtime.GOARCH {
		got, err := runVersion(ctx, file, p)
		if err != nil {
			return err
		}
		if got != version {
			return &VersionMismatchError{File: file, Version: version, Reports: got, How: "as `" + file + " version` answers"}
		}
		return nil
	}
	bi, err := buildinfo.ReadFile(file)
	if err != nil {
		return fmt.Errorf("%s: not a Go program whose version can be read (%v)", file, err)
	}
	if bi.Path != agentMainPackage {
		return fmt.Errorf("%s is %s, not the agent (%s)", file, bi.Path, agentMainPackage)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["GOOS"] != p.OS || settings["GOARCH"] != p.Arch {
		return fmt.Errorf("%s was built for %s/%s, not %s", file, settings["GOOS"], settings["GOARCH"], p)
	}
	if v, ok := ldflagsVersion(settings["-ldflags"]); ok {
		if v != version {
			return &VersionMismatchError{File: file, Version: version, Reports: v, How: "as its build information's -ldflags set it"}
		}
		return nil
	}
	found, err := holdsStringVar(file, p, version)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if !found {
		return &VersionMismatchError{File: file, Version: version, How: "no string variable of its data holds it"}
	}
	return nil
}

// runVersion runs `file version` and answers the version it reports.
func runVersion(ctx context.Context, file string, p Platform) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, file, "version")
	cmd.Env = []string{} // nothing of the caller's environment
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s version: %v", file, err)
	}
	f := strings.Fields(string(out))
	if len(f) < 3 || f[0] != "patchd-agent" {
		return "", fmt.Errorf("%s version answered %q, not patchd-agent VERSION %s", file, strings.TrimSpace(string(out)), p)
	}
	if f[2] != p.String() {
		return "", fmt.Errorf("%s is the agent for %s, not %s", file, f[2], p)
	}
	return f[1], nil
}

// ldflagsVersion answers the agent version set by the last -X of a
// build's -ldflags, as build information records them.
func ldflagsVersion(ldflags string) (string, bool) {
	f := strings.Fields(ldflags)
	version, ok := "", false
	for i := 0; i < len(f); i++ {
		arg := f[i]
		switch {
		case arg == "-X" || arg == "--X":
			if i+1 >= len(f) {
				continue
			}
			i++
			arg = f[i]
		case strings.HasPrefix(arg, "-X="):
			arg = strings.TrimPrefix(arg, "-X=")
		case strings.HasPrefix(arg, "--X="):
			arg = strings.TrimPrefix(arg, "--X=")
		default:
			continue
		}
		arg = strings.Trim(arg, `"'`)
		if v, found := strings.CutPrefix(arg, agentVersionVar+"="); found {
			version, ok = v, true
		}
	}
	return version, ok
}

// section is a loaded part of a program: its address and bytes.
type section struct {
	addr     uint64
	data     []byte
	writable bool
}

// holdsStringVar tells whether an initialized string variable in the
// writable data of the program file (64-bit, little-endian: every
// platform the agent is hosted for) holds exactly s.
func holdsStringVar(file string, p Platform, s string) (bool, error) {
	secs, err := loadSections(file, p)
	if err != nil {
		return false, err
	}
	want := []byte(s)
	var addrs []uint64
	for _, sec := range secs {
		for off := 0; ; {
			i := bytes.Index(sec.data[off:], want)
			if i < 0 {
				break
			}
			addrs = append(addrs, sec.addr+uint64(off+i))
			off += i + 1
		}
	}
	if len(addrs) == 0 {
		return false, nil
	}
	for _, sec := range secs {
		if !sec.writable {
			continue
		}
		d := sec.data
		for off := int((8 - sec.addr%8) % 8); off+16 <= len(d); off += 8 {
			if binary.LittleEndian.Uint64(d[off+8:]) != uint64(len(want)) {
				continue
			}
			ptr := binary.LittleEndian.Uint64(d[off:])
			for _, a := range addrs {
				if ptr == a {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// loadSections reads the sections with contents of an ELF, PE or Mach-O
// program.
func loadSections(file string, p Platform) ([]section, error) {
	var out []section
	switch p.OS {
	case "linux":
		f, err := elf.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		for _, s := range f.Sections {
			if s.Type == elf.SHT_NOBITS || s.Flags&elf.SHF_ALLOC == 0 {
				continue
			}
			b, err := s.Data()
			if err != nil {
				return nil, err
			}
			out = append(out, section{addr: s.Addr, data: b, writable: s.Flags&elf.SHF_WRITE != 0})
		}
	case "windows":
		f, err := pe.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		var base uint64
		switch h := f.OptionalHeader.(type) {
		case *pe.OptionalHeader64:
			base = h.ImageBase
		default:
			return nil, errors.New("not a 64-bit Windows program")
		}
		for _, s := range f.Sections {
			b, err := s.Data()
			if err != nil {
				return nil, err
			}
			if uint32(len(b)) > s.VirtualSize && s.VirtualSize > 0 {
				b = b[:s.VirtualSize]
			}
			out = append(out, section{addr: base + uint64(s.VirtualAddress), data: b, writable: s.Characteristics&pe.IMAGE_SCN_MEM_WRITE != 0})
		}
	case "darwin":
		f, err := macho.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		for _, s := range f.Sections {
			if s.Flags&0xff == 0x1 /* S_ZEROFILL */ {
				continue
			}
			b, err := s.Data()
			if err != nil {
				return nil, err
			}
			out = append(out, section{addr: s.Addr, data: b, writable: s.Seg == "__DATA"})
		}
	default:
		return nil, fmt.Errorf("no reader for %s programs", p.OS)
	}
	return out, nil
}
