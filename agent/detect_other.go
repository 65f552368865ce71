//go:build !linux && !darwin && !windows

package agent

// DetectManager knows no service manager on this system.
func DetectManager(root string) (Manager, error) { return "", ErrNoServiceManager }

// InstalledManager is unknown on this system.
func InstalledManager(root string) Manager { return "" }
