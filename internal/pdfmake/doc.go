// Package pdfmake writes small, valid PDF files for tests: pages of text
// lines in Helvetica (WinAnsi), content streams plain or Flate-compressed,
// and content streams of any decoded size (a bomb: megabytes of nothing
// that compress to kilobytes).
package pdfmake
