/* @launch
{"launches": [
  {"kernel": "conv1d", "global": [252, 16, 2], "local": null,
   "args": [{"buffer": "input0"}, {"buffer": "conv.weight"}, {"buffer": "conv.bias"},
            {"buffer": "output0"}, {"int": 8}, {"int": 256}, {"int": 5}]}]}
*/
// Naive OpenCL baseline for conv1d.py (x: 2 x 8 x 256, weight: 16 x 8 x 5, stride 1, no
// padding, output 2 x 16 x 252): one work-item per output element (position, channel, batch).
__kernel void conv1d(__global const float* x, __global const float* weight,
                     __global const float* bias, __global float* y, int in_channels, int length,
                     int kernel_size) {
  const int pos = get_global_id(0);
  const int out_channel = get_global_id(1);
  const int batch = get_global_id(2);
  const int out_length = get_global_size(0);
  float sum = bias[out_channel];
  for (int ci = 0; ci < in_channels; ++ci) {
    for (int k = 0; k < kernel_size; ++k) {
      sum += weight[(out_channel * in_channels + ci) * kernel_size + k] *
             x[(batch * in_channels + ci) * length + pos + k];
    }
  }
  y[(batch * get_global_size(1) + out_channel) * out_length + pos] = sum;
}
