"""One module per RocketMQ on-disk format (Kafka's are in :mod:`rmqlab.kafka`); each declares its
binary layout once (see `layout`)."""
