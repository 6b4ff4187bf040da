// Package icons draws SenClaw Sandbox's icons in pure Go.
//
// The tray's three states and the application icon are generated rather than
// downloaded, so that the committed PNGs can be checked against their
// source.
package icons

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
)

// Glyph is the white mark drawn on the shield.
type Glyph int

// The glyphs: a check (isolated), a dash (degraded), an exclamation mark
// (attention needed).
const (
	Check Glyph = iota
	Dash
	Exclamation
)

// Icon describes one icon.
type Icon struct {
	// File is the name the PNG is written under, relative to the repo root.
	File  string
	Size  int
	Fill  color.NRGBA
	Glyph Glyph
}

// All lists every generated icon: the tray's states in assets/, the
// application icon Wails packaging expects in build/ (and in assets/ for
// the window, which embeds it), and the same icon at the hicolor theme's
// sizes that `make install` puts in place.
func All() []Icon {
	app := color.NRGBA{0x2b, 0x5f, 0xb4, 0xff}
	all := []Icon{
		{File: "assets/tray-isolated.png", Size: 64, Fill: color.NRGBA{0x2e, 0x9d, 0x5b, 0xff}, Glyph: Check},
		{File: "assets/tray-degraded.png", Size: 64, Fill: color.NRGBA{0xc9, 0x8a, 0x12, 0xff}, Glyph: Dash},
		{File: "assets/tray-attention.png", Size: 64, Fill: color.NRGBA{0xd1, 0x3b, 0x36, 0xff}, Glyph: Exclamation},
		{File: "build/appicon.png", Size: 512, Fill: app, Glyph: Check},
		{File: "assets/appicon.png", Size: 512, Fill: app, Glyph: Check},
	}
	for _, n := range HicolorSizes {
		all = append(all, Icon{File: fmt.Sprintf("build/linux/icons/%dx%d.png", n, n), Size: n, Fill: app, Glyph: Check})
	}
	return all
}

// HicolorSizes are the hicolor icon theme sizes the application icon is
// drawn at besides 512 (build/appicon.png).
var HicolorSizes = []int{16, 24, 32, 48, 64, 128, 256}

// supersample is how many samples per pixel side smooth the edges.
const supersample = 4

// PNG renders ic as PNG bytes. The output is deterministic.
func PNG(ic Icon) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, ic.Size, ic.Size))
	white := color.NRGBA{0xff, 0xff, 0xff, 0xff}
	n := float64(supersample * supersample)
	for py := 0; py < ic.Size; py++ {
		for px := 0; px < ic.Size; px++ {
			var shield, mark float64
			for sy := 0; sy < supersample; sy++ {
				for sx := 0; sx < supersample; sx++ {
					x := (float64(px) + (float64(sx)+0.5)/supersample) / float64(ic.Size)
					y := (float64(py) + (float64(sy)+0.5)/supersample) / float64(ic.Size)
					if inShield(x, y) {
						shield++
						if inGlyph(ic.Glyph, x, y) {
							mark++
						}
					}
				}
			}
			if shield == 0 {
				continue
			}
			// Blend the mark over the fill, then apply the shield's coverage.
			t := mark / shield
			c := color.NRGBA{
				R: mix(ic.Fill.R, white.R, t),
				G: mix(ic.Fill.G, white.G, t),
				B: mix(ic.Fill.B, white.B, t),
				A: uint8(math.Round(255 * shield / n)),
			}
			img.SetNRGBA(px, py, c)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	if err := enc.Encode(&buf, img); err != nil {
		panic(err) // encoding an in-memory NRGBA image cannot fail
	}
	return buf.Bytes()
}

func mix(a, b uint8, t float64) uint8 {
	return uint8(math.Round(float64(a)*(1-t) + float64(b)*t))
}

// inShield reports whether (x, y), in unit coordinates, is inside the
// shield: straight sides on top, a rounded point at the bottom.
func inShield(x, y float64) bool {
	const top, mid, bottom, half = 0.06, 0.45, 0.96, 0.40
	dx := math.Abs(x - 0.5)
	switch {
	case y < top:
		return false
	case y <= mid:
		return dx <= half
	case y <= bottom:
		k := (y - mid) / (bottom - mid)
		return dx <= half*math.Sqrt(1-k*k)
	}
	return false
}

func inGlyph(g Glyph, x, y float64) bool {
	switch g {
	case Check:
		return nearSegment(x, y, 0.30, 0.50, 0.45, 0.65, 0.07) || nearSegment(x, y, 0.45, 0.65, 0.72, 0.34, 0.07)
	case Dash:
		return nearSegment(x, y, 0.30, 0.48, 0.70, 0.48, 0.07)
	case Exclamation:
		return nearSegment(x, y, 0.5, 0.24, 0.5, 0.56, 0.065) || math.Hypot(x-0.5, y-0.73) <= 0.075
	}
	return false
}

// nearSegment reports whether (x, y) is within r of the segment (ax, ay)-(bx, by).
func nearSegment(x, y, ax, ay, bx, by, r float64) bool {
	vx, vy := bx-ax, by-ay
	t := ((x-ax)*vx + (y-ay)*vy) / (vx*vx + vy*vy)
	t = math.Max(0, math.Min(1, t))
	return math.Hypot(x-(ax+t*vx), y-(ay+t*vy)) <= r
}
