package ctl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// configFile is <config dir>/patchctl/config.json. Secrets and tokens live
// beside it in files of mode 0600, one per profile.
type configFile struct {
	Current  string             `json:"current,omitempty"`
	Profiles map[string]profile `json:"profiles"`
}

// profile is a server and API credential to use.
type profile struct {
	Server   string `json:"server"`
	ClientID string `json:"clientId"`
	Output   string `json:"output,omitempty"`
	// CAFile is the CA certificate file the server's certificate is
	// checked against (a server with its own CA), saved by login --ca-file.
	CAFile string `json:"caFile,omitempty"`
	// Org names the organization the profile's credential belongs to
	// (login --org), so that --org picks the profile among a person's.
	Org string `json:"org,omitempty"`
}

// tokenCache is <profile>.token: the last bearer token, reused until it
// expires or the server refuses it.
type tokenCache struct {
	Server      string    `json:"server"`
	ClientID    string    `json:"clientId"`
	AccessToken string    `json:"accessToken"`
	ExpiresAt   time.Time `json:"expiresAt"`
}

var profileNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func checkProfileName(name string) error {
	if !profileNameRE.MatchString(name) {
		return usagef("bad profile name %q: letters, digits, '.', '_' and '-' only", name)
	}
	return nil
}

func checkServerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("bad server address %q: want http(s)://host[:port]", s)
	}
	return nil
}

// configDir is PATCHCTL_CONFIG_DIR, else the user's config folder.
func (s *session) configDir() (string, error) {
	if d := s.io.Getenv("PATCHCTL_CONFIG_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("config folder: %w", err)
	}
	return filepath.Join(d, "patchctl"), nil
}

func (s *session) loadConfig() (*configFile, error) {
	if s.config != nil {
		return s.config, nil
	}
	dir, err := s.configDir()
	if err != nil {
		return nil, err
	}
	cfg := &configFile{Profiles: map[string]profile{}}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read config: %w", err)
	default:
		if err := json.Unmarshal(b, cfg); err != nil {
			return nil, fmt.Errorf("read config %s: %w", filepath.Join(dir, "config.json"), err)
		}
		if cfg.Profiles == nil {
			cfg.Profiles = map[string]profile{}
		}
	}
	s.config = cfg
	return cfg, nil
}

func (s *session) saveConfig(cfg *configFile) error {
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return s.writeFile("config.json", append(b, '\n'))
}

// writeFile replaces a file of the config folder atomically, mode 0600 (the
// folder is 0700).
func (s *session) writeFile(name string, data []byte) error {
	dir, err := s.configDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("config folder: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

func (s *session) readFile(name string) ([]byte, error) {
	dir, err := s.configDir()
	if err != nil {
		return nil, err
	}
	return os.ReadFile(filepath.Join(dir, name))
}

// readSecret answers the profile's stored client secret, "" when none.
func (s *session) readSecret(profileName string) (string, error) {
	b, err := s.readFile(profileName + ".secret")
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read secret: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func (s *session) writeSecret(profileName, secret string) error {
	return s.writeFile(profileName+".secret", []byte(secret+"\n"))
}

func (s *session) readToken(profileName string) (tokenCache, error) {
	var tc tokenCache
	b, err := s.readFile(profileName + ".token")
	if err != nil {
		return tc, err
	}
	err = json.Unmarshal(b, &tc)
	return tc, err
}

func (s *session) writeToken(profileName string, tc tokenCache) error {
	b, err := json.Marshal(tc)
	if err != nil {
		return err
	}
	return s.writeFile(profileName+".token", append(b, '\n'))
}

// removeProfileFiles deletes a profile's secret and token.
func (s *session) removeProfileFiles(profileName string) error {
	dir, err := s.configDir()
	if err != nil {
		return err
	}
	for _, suffix := range []string{".secret", ".token"} {
		if err := os.Remove(filepath.Join(dir, profileName+suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
