#include "report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/json_util.hpp"

namespace mblast::report::svg {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

std::string px(double value) {
  if (!std::isfinite(value)) value = 0;
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  std::string text = buffer;
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text == "-0" ? "0" : text;
}

const std::vector<std::string>& palette() {
  static const std::vector<std::string> colors = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                                  "#56B4E9", "#D55E00", "#F0E442", "#000000"};
  return colors;
}

namespace {

std::string style_attributes(const Style& s) {
  std::string out = " fill=\"" + escape(s.fill) + "\" stroke=\"" + escape(s.stroke) + "\"";
  if (s.stroke != "none") out += " stroke-width=\"" + px(s.stroke_width) + "\"";
  if (s.opacity < 1) out += " opacity=\"" + px(s.opacity) + "\"";
  if (!s.dash.empty()) out += " stroke-dasharray=\"" + escape(s.dash) + "\"";
  return out;
}

// <name attributes/>, or with a <title> child (a tooltip) when `tooltip` is not empty.
std::string element(const std::string& name, const std::string& attributes,
                    const std::string& tooltip) {
  if (tooltip.empty()) return "<" + name + attributes + "/>\n";
  return "<" + name + attributes + "><title>" + escape(tooltip) + "</title></" + name + ">\n";
}

}  // namespace

Canvas::Canvas(double width, double height, const std::string& label)
    : width_(width), height_(height), label_(label) {}

void Canvas::rect(double x, double y, double w, double h, const Style& style,
                  const std::string& tooltip) {
  body_ += element("rect",
                   " x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(0.0, w)) +
                       "\" height=\"" + px(std::max(0.0, h)) + "\"" + style_attributes(style),
                   tooltip);
}

void Canvas::line(double x1, double y1, double x2, double y2, const Style& style) {
  body_ += element("line",
                   " x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" +
                       px(y2) + "\"" + style_attributes(style),
                   {});
}

void Canvas::polyline(const std::vector<Point>& points, const Style& style,
                      const std::string& tooltip) {
  if (points.empty()) return;
  std::string coordinates;
  for (const auto& [x, y] : points) {
    coordinates += (coordinates.empty() ? "" : " ") + px(x) + "," + px(y);
  }
  body_ += element(
      "polyline",
      " points=\"" + coordinates + "\"" + style_attributes(style) + " stroke-linejoin=\"round\"",
      tooltip);
}

void Canvas::circle(double cx, double cy, double r, const Style& style,
                    const std::string& tooltip) {
  body_ += element(
      "circle",
      " cx=\"" + px(cx) + "\" cy=\"" + px(cy) + "\" r=\"" + px(r) + "\"" + style_attributes(style),
      tooltip);
}

void Canvas::text(double x, double y, std::string_view text, const Font& font) {
  body_ += "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\" font-size=\"" + px(font.size) +
           "\" fill=\"" + escape(font.fill) + "\"";
  if (font.anchor != "start") body_ += " text-anchor=\"" + escape(font.anchor) + "\"";
  if (font.bold) body_ += " font-weight=\"bold\"";
  if (!font.baseline.empty()) body_ += " dominant-baseline=\"" + escape(font.baseline) + "\"";
  if (font.halo) {
    body_ += " stroke=\"#fff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"";
  }
  if (font.rotate != 0) {
    body_ += " transform=\"rotate(" + px(font.rotate) + " " + px(x) + " " + px(y) + ")\"";
  }
  body_ += ">" + escape(text) + "</text>\n";
}

std::string Canvas::str() const {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + px(width_) + " " +
         px(height_) + "\" width=\"" + px(width_) + "\" height=\"" + px(height_) +
         "\" role=\"img\" font-family=\"Helvetica, Arial, sans-serif\">\n<title>" + escape(label_) +
         "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n" + body_ + "</svg>\n";
}

Scale::Scale(double lo, double hi, double from_px, double to_px, bool log)
    : lo_(lo), hi_(hi), from_(from_px), to_(to_px), log_(log) {}

Scale Scale::linear(double lo, double hi, double from_px, double to_px) {
  if (hi <= lo) hi = lo + 1;
  return Scale(lo, hi, from_px, to_px, false);
}

Scale Scale::log(double lo, double hi, double from_px, double to_px) {
  lo = std::max(lo, 1e-12);
  if (hi <= lo) hi = lo * 2;
  return Scale(lo, hi, from_px, to_px, true);
}

double Scale::operator()(double value) const {
  double t;
  if (log_) {
    value = std::max(value, 1e-12);
    t = (std::log(value) - std::log(lo_)) / (std::log(hi_) - std::log(lo_));
  } else {
    t = (value - lo_) / (hi_ - lo_);
  }
  return from_ + t * (to_ - from_);
}

std::vector<Tick> linear_ticks(double lo, double hi, int count, const std::string& suffix) {
  std::vector<Tick> ticks;
  if (!(hi > lo) || count < 1) return ticks;
  const double raw = (hi - lo) / count;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  const double last = std::ceil(hi / step - 1e-9) * step;  // the first round value >= hi
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= last + step * 1e-9; v += step) {
    const double clean = std::abs(v) < step * 1e-9 ? 0.0 : v;
    ticks.push_back({clean, short_number(clean, 4) + suffix});
  }
  return ticks;
}

std::vector<Tick> log2_ticks(double lo, double hi, const std::string& suffix, int max_count) {
  std::vector<Tick> ticks;
  if (!(lo > 0) || !(hi > lo)) return ticks;
  const int first = static_cast<int>(std::ceil(std::log2(lo) - 1e-9));
  const int last = static_cast<int>(std::floor(std::log2(hi) + 1e-9));
  int stride = 1;
  while ((last - first) / stride + 1 > max_count) ++stride;
  for (int k = first; k <= last; ++k) {
    if (k % stride != 0) continue;
    const double value = std::ldexp(1.0, k);
    ticks.push_back({value, short_number(value, 4) + suffix});
  }
  return ticks;
}

double text_width(std::string_view text, double size) {
  // Rough Helvetica/Arial advance widths, in ems.
  static const std::string_view narrow = "ijlft.,:;'|!()[]/-";
  double ems = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) == 0x80) continue;  // UTF-8 continuation
    if (c == ' ') {
      ems += 0.28;
    } else if (narrow.find(c) != std::string_view::npos) {
      ems += 0.3;
    } else if ((c >= 'A' && c <= 'Z') || c == 'm' || c == 'w' || c == '%') {
      ems += 0.76;
    } else {
      ems += 0.54;
    }
  }
  return ems * size;
}

}  // namespace mblast::report::svg
