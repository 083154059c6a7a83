package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// VersionFlag is the flag every binary answers with its version.
const VersionFlag = "version"

// Version describes the running binary: its module version, the commit it
// was built from (with "+dirty" when the tree had local changes) and the
// Go version, read from the build information Go embeds.
func Version(name string) string {
	return versionOf(name, "", debug.ReadBuildInfo)
}

// VersionOf is Version with the version given (e.g. set at link time);
// empty takes the module version.
func VersionOf(name, version string) string {
	return versionOf(name, version, debug.ReadBuildInfo)
}

func versionOf(name, given string, read func() (*debug.BuildInfo, bool)) string {
	version, commit, dirty := "(devel)", "unknown", ""
	if info, ok := read(); ok {
		if info.Main.Version != "" {
			version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision":
				commit = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				dirty = "+dirty"
			}
		}
	}
	if given != "" {
		version = given
	}
	return fmt.Sprintf("%s %s (commit %s%s, %s)", name, version, commit, dirty, runtime.Version())
}
