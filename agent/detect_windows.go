//go:build windows

package agent

// DetectManager is the Service Control Manager on Windows.
func DetectManager(root string) (Manager, error) { return WinSCM, nil }

// InstalledManager is the Service Control Manager on Windows.
func InstalledManager(root string) Manager { return WinSCM }
