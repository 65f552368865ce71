//go:build linux

package agent

// DetectManager is the service manager of the system under root.
func DetectManager(root string) (Manager, error) { return detectLinux(root) }

// InstalledManager is the manager the agent's service was registered with.
func InstalledManager(root string) Manager { return installedLinux(root) }
