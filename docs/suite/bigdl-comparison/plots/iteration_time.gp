set terminal pngcairo size 1240,900 enhanced font 'sans,11'
set output '/work/main/docs/suite/bigdl-comparison/iteration_time.png'
set multiplot layout 2,2 title "Time per iteration (emulated 500mbit links)" font ',13'
set grid ytics
set key top left font ',9' opaque
set ylabel 'ms per iteration'
set xlabel 'workers'
set offsets 0, 0, graph 0.3, 0

set title 'vgg16' noenhanced
unset logscale x
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics auto
set xrange [*:*]
set yrange [0:*]
plot '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg16.dat' using 3:xtic(2) lc rgb '#000000' title 'bigdl', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg16.dat' using 4:xtic(2) lc rgb '#999999' title 'fifo', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg16.dat' using 5:xtic(2) lc rgb '#1f77b4' title 'nonpreemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg16.dat' using 6:xtic(2) lc rgb '#d62728' title 'preemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg16.dat' using 7:xtic(2) lc rgb '#2ca02c' title 'preemptive+laco', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg16.dat' using 8:xtic(2) lc rgb '#9467bd' title 'preemptive+grouping'
set title 'resnet50' noenhanced
unset logscale x
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics auto
set xrange [*:*]
set yrange [0:*]
plot '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-resnet50.dat' using 3:xtic(2) lc rgb '#000000' title 'bigdl', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-resnet50.dat' using 4:xtic(2) lc rgb '#999999' title 'fifo', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-resnet50.dat' using 5:xtic(2) lc rgb '#1f77b4' title 'nonpreemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-resnet50.dat' using 6:xtic(2) lc rgb '#d62728' title 'preemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-resnet50.dat' using 7:xtic(2) lc rgb '#2ca02c' title 'preemptive+laco', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-resnet50.dat' using 8:xtic(2) lc rgb '#9467bd' title 'preemptive+grouping'
set title 'inception_v3' noenhanced
unset logscale x
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics auto
set xrange [*:*]
set yrange [0:*]
plot '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-inception_v3.dat' using 3:xtic(2) lc rgb '#000000' title 'bigdl', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-inception_v3.dat' using 4:xtic(2) lc rgb '#999999' title 'fifo', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-inception_v3.dat' using 5:xtic(2) lc rgb '#1f77b4' title 'nonpreemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-inception_v3.dat' using 6:xtic(2) lc rgb '#d62728' title 'preemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-inception_v3.dat' using 7:xtic(2) lc rgb '#2ca02c' title 'preemptive+laco', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-inception_v3.dat' using 8:xtic(2) lc rgb '#9467bd' title 'preemptive+grouping'
set title 'vgg-small' noenhanced
unset logscale x
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xtics auto
set xrange [*:*]
set yrange [0:*]
plot '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg-small.dat' using 3:xtic(2) lc rgb '#000000' title 'bigdl', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg-small.dat' using 4:xtic(2) lc rgb '#999999' title 'fifo', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg-small.dat' using 5:xtic(2) lc rgb '#1f77b4' title 'nonpreemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg-small.dat' using 6:xtic(2) lc rgb '#d62728' title 'preemptive', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg-small.dat' using 7:xtic(2) lc rgb '#2ca02c' title 'preemptive+laco', \
     '/work/main/docs/suite/bigdl-comparison/plots/iteration_time-vgg-small.dat' using 8:xtic(2) lc rgb '#9467bd' title 'preemptive+grouping'
unset multiplot
