package desktop

import (
	"bytes"
	"image"
	"image/draw"
	_ "image/png" // the icons are PNG

	"github.com/senclaw/sandbox/assets"
)

// trayIcon returns the PNG of level's tray icon.
func trayIcon(l Level) []byte {
	switch l {
	case LevelIsolated:
		return assets.TrayIsolated()
	case LevelDegraded:
		return assets.TrayDegraded()
	}
	return assets.TrayAttention()
}

// notifyImage is the image-data hint of the notification spec:
// width, height, rowstride, has alpha, bits per sample, channels, RGBA.
type notifyImage struct {
	W, H, Stride int32
	Alpha        bool
	Bits, Chans  int32
	Data         []byte
}

// imageData decodes a PNG into the notification spec's raw image.
func imageData(pngData []byte) (notifyImage, bool) {
	img, _, err := image.Decode(bytes.NewReader(pngData))
	if err != nil {
		return notifyImage{}, false
	}
	b := img.Bounds()
	rgba := image.NewNRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgba, rgba.Bounds(), img, b.Min, draw.Src)
	return notifyImage{W: int32(b.Dx()), H: int32(b.Dy()), Stride: int32(rgba.Stride), Alpha: true, Bits: 8, Chans: 4, Data: rgba.Pix}, true
}
