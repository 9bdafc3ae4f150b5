// Package pdfmake writes small, valid PDF files for tests: pages of text
// lines in Helvetica (WinAnsi), or in a font of codes of its own with a
// ToUnicode CMap (a Type0 font with Identity-H, two-byte codes, or a
// simple font; CMap writes the map), content streams plain or
// Flate-compressed, and content streams of any decoded size (a bomb:
// megabytes of nothing that compress to kilobytes).
package pdfmake
