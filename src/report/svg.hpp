#pragma once
// A small SVG writer for plots: shapes and text on a canvas, linear and log scales with ticks,
// axes with grid lines, titles and legends. Output is self-contained (no fonts, no scripts).
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mblast::report::svg {

// XML text and attribute escaping.
std::string escape(std::string_view text);
// A pixel coordinate with at most 2 decimals ("12.5", "3").
std::string px(double value);

// Colors that stay apart for most kinds of color blindness (Okabe-Ito), then greys.
const std::vector<std::string>& palette();

struct Style {
  std::string fill = "none";
  std::string stroke = "none";
  double stroke_width = 1;
  double opacity = 1;
  std::string dash;  // stroke-dasharray, e.g. "4 3"
};

struct Font {
  double size = 12;
  std::string anchor = "start";  // start | middle | end
  std::string fill = "#222";
  bool bold = false;
  double rotate = 0;     // degrees about (x, y)
  std::string baseline;  // dominant-baseline: "", "middle", "hanging"
  bool halo = false;     // a white outline, to stay readable over lines
};

using Point = std::pair<double, double>;

class Canvas {
 public:
  // `label` becomes the image's accessible name (role="img" with <title>).
  Canvas(double width, double height, const std::string& label);

  double width() const { return width_; }
  double height() const { return height_; }

  // `tooltip` (optional) is shown on hover through a <title> child.
  void rect(double x, double y, double w, double h, const Style& style,
            const std::string& tooltip = {});
  void line(double x1, double y1, double x2, double y2, const Style& style);
  void polyline(const std::vector<Point>& points, const Style& style,
                const std::string& tooltip = {});
  void circle(double cx, double cy, double r, const Style& style, const std::string& tooltip = {});
  void text(double x, double y, std::string_view text, const Font& font = {});

  // The whole <svg> element.
  std::string str() const;

 private:
  double width_, height_;
  std::string label_;
  std::string body_;
};

// Maps data values to pixels, linearly or on a log scale.
class Scale {
 public:
  static Scale linear(double lo, double hi, double from_px, double to_px);
  static Scale log(double lo, double hi, double from_px, double to_px);  // lo, hi > 0
  double operator()(double value) const;
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  bool is_log() const { return log_; }

 private:
  Scale(double lo, double hi, double from_px, double to_px, bool log);
  double lo_, hi_, from_, to_;
  bool log_;
};

struct Tick {
  double value;
  std::string label;
};

// About `count` round ticks (1, 2 or 5 times a power of ten) from lo up to the first one >= hi.
std::vector<Tick> linear_ticks(double lo, double hi, int count, const std::string& suffix = {});
// Powers of two in [lo, hi] ("0.25x", "1x", "4x"), thinned to at most `max_count`.
std::vector<Tick> log2_ticks(double lo, double hi, const std::string& suffix = "x",
                             int max_count = 10);

// The plot area, in canvas pixels.
struct Frame {
  double left, top, right, bottom;
  double width() const { return right - left; }
  double height() const { return bottom - top; }
};

struct Axis {
  std::string label;
  std::vector<Tick> ticks;
};

// Light grid lines at the ticks, tick labels, the axis lines and both axis labels.
void draw_axes(Canvas& canvas, const Frame& frame, const Scale& x, const Axis& x_axis,
               const Scale& y, const Axis& y_axis);
// The title (bold) and an optional grey subtitle at the top left.
void draw_title(Canvas& canvas, const std::string& title, const std::string& subtitle = {});
// A message in the middle of the frame, for plots without data.
void draw_empty(Canvas& canvas, const Frame& frame, const std::string& message);

struct LegendItem {
  std::string label;
  Style style;
  bool swatch = false;  // a filled box instead of a line sample
};
// A boxed legend with its top-right corner at (right, top).
void draw_legend(Canvas& canvas, double right, double top, const std::vector<LegendItem>& items);

// Rough width of `text` in pixels at `size` (for layout; no font metrics here).
double text_width(std::string_view text, double size);

}  // namespace mblast::report::svg
