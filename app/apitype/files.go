package apitype

// FileEntry is one entry of a workspace listing.
type FileEntry struct {
	Name       string `json:"name"`
	Path       string `json:"path"`
	Dir        bool   `json:"dir"`
	Size       int64  `json:"size"`
	ModifiedMs int64  `json:"modifiedMs"`
	// Link is set for a symbolic link, with its target.
	Link string `json:"link,omitempty"`
	// ReadOnly is true inside a read-only mount.
	ReadOnly bool `json:"readOnly,omitempty"`
}

// FileContent is what a read returns.
type FileContent struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Encoding is "utf-8" or "base64".
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
}

// MaxFileRead is the default and largest size a file read returns.
const MaxFileRead = 2 << 20

// MaxFileWrite bounds one file write.
const MaxFileWrite = 64 << 20
