set terminal pngcairo size 1240,900 enhanced font 'sans,11'
set output '/work/main/docs/suite/bigdl-comparison/speedup.png'
set multiplot layout 2,2 title "Speedup over bigdl at the same cluster (emulated 500mbit links)" font ',13'
set grid ytics
set key top left font ',9' opaque
set ylabel 'x bigdl'
set xlabel 'workers'
set offsets 0, 0, graph 0.3, 0

set title 'vgg16' noenhanced
set logscale x 2
set xrange [0.769231:10.4]
set yrange [0:*]
plot '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg16.dat' using 1:3:xtic(2) with linespoints lw 2 pt 7 lc rgb '#000000' title 'bigdl', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg16.dat' using 1:4:xtic(2) with linespoints lw 2 pt 7 lc rgb '#999999' title 'fifo', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg16.dat' using 1:5:xtic(2) with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'nonpreemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg16.dat' using 1:6:xtic(2) with linespoints lw 2 pt 7 lc rgb '#d62728' title 'preemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg16.dat' using 1:7:xtic(2) with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'preemptive+laco', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg16.dat' using 1:8:xtic(2) with linespoints lw 2 pt 7 lc rgb '#9467bd' title 'preemptive+grouping'
set title 'resnet50' noenhanced
set logscale x 2
set xrange [0.769231:10.4]
set yrange [0:*]
plot '/work/main/docs/suite/bigdl-comparison/plots/speedup-resnet50.dat' using 1:3:xtic(2) with linespoints lw 2 pt 7 lc rgb '#000000' title 'bigdl', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-resnet50.dat' using 1:4:xtic(2) with linespoints lw 2 pt 7 lc rgb '#999999' title 'fifo', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-resnet50.dat' using 1:5:xtic(2) with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'nonpreemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-resnet50.dat' using 1:6:xtic(2) with linespoints lw 2 pt 7 lc rgb '#d62728' title 'preemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-resnet50.dat' using 1:7:xtic(2) with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'preemptive+laco', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-resnet50.dat' using 1:8:xtic(2) with linespoints lw 2 pt 7 lc rgb '#9467bd' title 'preemptive+grouping'
set title 'inception_v3' noenhanced
set logscale x 2
set xrange [0.769231:10.4]
set yrange [0:*]
plot '/work/main/docs/suite/bigdl-comparison/plots/speedup-inception_v3.dat' using 1:3:xtic(2) with linespoints lw 2 pt 7 lc rgb '#000000' title 'bigdl', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-inception_v3.dat' using 1:4:xtic(2) with linespoints lw 2 pt 7 lc rgb '#999999' title 'fifo', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-inception_v3.dat' using 1:5:xtic(2) with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'nonpreemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-inception_v3.dat' using 1:6:xtic(2) with linespoints lw 2 pt 7 lc rgb '#d62728' title 'preemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-inception_v3.dat' using 1:7:xtic(2) with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'preemptive+laco', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-inception_v3.dat' using 1:8:xtic(2) with linespoints lw 2 pt 7 lc rgb '#9467bd' title 'preemptive+grouping'
set title 'vgg-small' noenhanced
set logscale x 2
set xrange [1.53846:2.6]
set yrange [0:*]
plot '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg-small.dat' using 1:3:xtic(2) with linespoints lw 2 pt 7 lc rgb '#000000' title 'bigdl', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg-small.dat' using 1:4:xtic(2) with linespoints lw 2 pt 7 lc rgb '#999999' title 'fifo', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg-small.dat' using 1:5:xtic(2) with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'nonpreemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg-small.dat' using 1:6:xtic(2) with linespoints lw 2 pt 7 lc rgb '#d62728' title 'preemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg-small.dat' using 1:7:xtic(2) with linespoints lw 2 pt 7 lc rgb '#2ca02c' title 'preemptive+laco', \
     '/work/main/docs/suite/bigdl-comparison/plots/speedup-vgg-small.dat' using 1:8:xtic(2) with linespoints lw 2 pt 7 lc rgb '#9467bd' title 'preemptive+grouping'
unset multiplot
