//go:build darwin

package agent

// DetectManager is launchd on macOS.
func DetectManager(root string) (Manager, error) { return Launchd, nil }

// InstalledManager is launchd on macOS.
func InstalledManager(root string) Manager { return Launchd }
